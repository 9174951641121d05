package scenario

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/retryhttp/retryhttp/pace"

	"github.com/retryhttp/retryhttp/bench/peers"
)

// A BurstRun is the burst part of the quota scenario: Requests keyed POSTs
// (each with an Idempotency-Key and a body from a strings.Reader, so with
// GetBody) fired at once through one client, to a loopback token bucket
// of Quota a second holding at most Burst, that announces itself on every
// answer as OpenAI does, answers 429 with Retry-After: 1 beyond it, and
// answers a share Fail of what it admits with a 500, chosen by a hash of
// Seed, the request and the attempt. A request has no deadline; the run
// as a whole is cut at Limit.
type BurstRun struct {
	Requests     int
	Quota, Burst float64
	Fail         float64
	Seed         uint64
	Limit        time.Duration
}

// DefaultBurst returns the burst of the quota scenario: 300 keyed POSTs at
// once, to a bucket of 20 a second holding 20, 1% of its admissions
// answered 500, seed 1, cut at 2 minutes.
func DefaultBurst() BurstRun {
	return BurstRun{Requests: 300, Quota: 20, Burst: 20, Fail: 0.01, Seed: 1, Limit: 2 * time.Minute}
}

// Ideal is the least time in which the bucket admits the whole burst: the
// burst at once, the rest at the quota (the retries of the 500s aside).
func (br BurstRun) Ideal() time.Duration {
	return time.Duration(float64(br.Requests-int(br.Burst)) / br.Quota * float64(time.Second))
}

// A BurstRow is a library of the burst table, made for the host (host:port,
// as the request's URL names it) that the run's server listens on, so
// that a row may declare its quota.
type BurstRow struct {
	Name    string
	Library func(host string) peers.Library
}

// Names of the retryhttp rows of the burst table.
const (
	BurstMaxWait30 = "retryhttp + pacing, MaxWait 30 s"
	BurstDefault   = "retryhttp + pacing, MaxWait 10 s (the default)"
	BurstQuota     = "retryhttp + pacing, MaxWait 30 s, Quota 20/s declared"
)

// BurstRows returns the rows of the burst table, in table order: retryhttp
// paced with MaxWait 30 s, at its defaults, and with MaxWait 30 s and the
// quota declared; retryhttp without pacing; go-retryablehttp; the AWS
// SDK's adaptive mode.
func BurstRows(br BurstRun) []BurstRow {
	fixed := func(lib peers.Library) func(string) peers.Library {
		return func(string) peers.Library { return lib }
	}
	return []BurstRow{
		{BurstMaxWait30, fixed(peers.RetryHTTPPaced(BurstMaxWait30, pace.MaxWait(30*time.Second)))},
		{BurstDefault, fixed(peers.RetryHTTPPaced(BurstDefault))},
		{BurstQuota, func(host string) peers.Library {
			return peers.RetryHTTPPaced(BurstQuota, pace.MaxWait(30*time.Second),
				pace.Quota(host, int(br.Quota), time.Second))
		}},
		{peers.RetryHTTP, fixed(peers.Library{Name: peers.RetryHTTP, New: peers.NewRetryHTTP})},
		{peers.RetryableHTTP, fixed(peers.Library{Name: peers.RetryableHTTP, New: peers.NewRetryableHTTP})},
		{peers.AWSAdaptive, fixed(peers.Library{Name: peers.AWSAdaptive, New: peers.NewAWSAdaptive})},
	}
}

// A BurstResult is what one row of a burst run measured.
type BurstResult struct {
	Requests int // requests fired
	OK       int // answered 200
	Paced    int // failed with a *pace.Error, never sent
	Got429   int // a 429 returned to the caller
	Got500   int // a 500 returned to the caller
	Errs     int // other errors (the run's limit among them)

	Received  int           // attempts that reached the server
	Throttled int           // of them, those answered 429
	Failed    int           // of them, those answered 500
	Last      time.Duration // from the burst to the end of the last request
}

// Others is the number of requests that failed otherwise than with a
// *pace.Error: a 429 or a 500 returned, or an error.
func (r BurstResult) Others() int { return r.Requests - r.OK - r.Paced }

// ThrottledShare is the share of the attempts reaching the server that
// were answered 429.
func (r BurstResult) ThrottledShare() float64 {
	return float64(r.Throttled) / float64(max(r.Received, 1))
}

// Run fires the burst through the row's library over a fresh base, to a
// server of its own, and returns what it measured.
func (br BurstRun) Run(ctx context.Context, row BurstRow) BurstResult {
	q := newQuota(QuotaRun{Quota: br.Quota, Burst: br.Burst, Announce: true, Fail: br.Fail, Seed: br.Seed})
	srv := NewServer(q.serve)
	u, err := url.Parse(srv.URL)
	if err != nil {
		panic("scenario: the server's URL: " + err.Error())
	}
	cl := client(row.Library(u.Host), peers.NewBase(), QuotaConfig)
	ctx, cancel := context.WithTimeout(ctx, br.Limit)
	defer cancel()

	out := make([]Outcome, br.Requests)
	var wg sync.WaitGroup
	release := make(chan struct{})
	start := time.Now()
	q.begin(start)
	for i := range out {
		wg.Go(func() {
			<-release
			body := func() io.Reader { return strings.NewReader(`{"item":` + strconv.Itoa(i) + `}`) }
			out[i] = Send(ctx, cl, http.MethodPost, srv.URL+"/v1/items", id("b", i), id("key-b", i), body, true)
		})
	}
	close(release)
	wg.Wait()
	cl.CloseIdleConnections()
	srv.Close()

	res := BurstResult{Requests: len(out)}
	var pe *pace.Error
	for _, o := range out {
		res.Last = max(res.Last, o.Done.Sub(start))
		switch {
		case o.OK:
			res.OK++
		case errors.As(o.Err, &pe):
			res.Paced++
		case o.Err != nil:
			res.Errs++
		case o.Status == http.StatusTooManyRequests:
			res.Got429++
		case o.Status == http.StatusInternalServerError:
			res.Got500++
		default:
			res.Errs++
		}
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	res.Throttled, res.Failed = len(q.refused), q.failed
	res.Received = len(q.admitted) + len(q.refused)
	return res
}

// QuotaBurst runs the burst part of the quota scenario: every row of BurstRows
// through DefaultBurst, one after the other.
func QuotaBurst(ctx context.Context, _ Params) []Table {
	br := DefaultBurst()
	tb := br.table()
	for _, row := range BurstRows(br) {
		tb.Add(br.cells(row.Name, br.Run(ctx, row))...)
	}
	return []Table{tb}
}

// table returns the empty table of br's results.
func (br BurstRun) table() Table {
	return Table{
		Title: fmt.Sprintf("quota: a burst of %d keyed POSTs at a bucket of %g a second", br.Requests, br.Quota),
		Note: fmt.Sprintf("%d POSTs, each with an Idempotency-Key and a body with GetBody (http.NewRequest over a "+
			"strings.Reader), fired at once through one client, without deadlines, to a loopback server with a "+
			"token bucket of %g a second holding at most %g, announced on every answer as OpenAI does "+
			"(x-ratelimit-*-requests); beyond it, 429 with Retry-After: 1; %g%% of what it admits (a hash of "+
			"seed %d, request and attempt) is answered 500. Other failures: the requests that ended in a 429 "+
			"or a 500 returned to the caller, or an error other than a *pace.Error. 429s at the server: of "+
			"every attempt it received. Time: from the burst until the last request ended (ideal %.1f s: the "+
			"bucket's %g at once, the rest at the quota, and the 500s' retries beside). 3 attempts, each "+
			"library's own delays and budget.",
			br.Requests, br.Quota, br.Burst, 100*br.Fail, br.Seed, br.Ideal().Seconds(), br.Burst),
		Header: []string{"library", "succeeded", "failed with *pace.Error", "other failures",
			"429s at the server", "500s at the server", "time until the last ended"},
	}
}

// cells returns the row of the result r of the library called name.
func (br BurstRun) cells(name string, r BurstResult) []string {
	others := strconv.Itoa(r.Others())
	if r.Others() > 0 {
		others += fmt.Sprintf(" (%d 429, %d 500, %d errors)", r.Got429, r.Got500, r.Errs)
	}
	return []string{name,
		fmt.Sprintf("%d of %d", r.OK, r.Requests),
		strconv.Itoa(r.Paced),
		others,
		fmt.Sprintf("%d (%s of %d)", r.Throttled, Percent(r.Throttled, r.Received), r.Received),
		strconv.Itoa(r.Failed),
		strconv.FormatFloat(r.Last.Seconds(), 'f', 2, 64) + " s",
	}
}
