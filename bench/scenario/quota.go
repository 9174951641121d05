package scenario

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/retryhttp/retryhttp/pace"

	"github.com/retryhttp/retryhttp/bench/peers"
)

// A QuotaRun is one run of the quota scenario: an open-loop client sends
// Rate GETs a second for Length, each started at its time on a goroutine
// of its own whatever the others are doing, each with a deadline of
// Timeout, to a loopback server whose token bucket admits Quota requests a
// second (Rise from RiseAt on, when Rise is set) with a burst of Burst,
// and answers 429 with Retry-After: 1 beyond it.
type QuotaRun struct {
	Rate    int
	Length  time.Duration
	Timeout time.Duration

	Quota, Burst float64
	Rise         float64
	RiseAt       time.Duration
	// Announce has every answer announce the bucket as OpenAI does:
	// X-Ratelimit-Limit-Requests (its size), -Remaining-Requests (the
	// whole requests it holds) and -Reset-Requests (the time until it is
	// full again, as a Go duration).
	Announce bool
	// Fail is the share of the attempts the bucket admits that are then
	// answered 500, chosen by a hash of Seed, the request and the attempt.
	Fail float64
	Seed uint64
}

// Requests returns the number of requests qr starts.
func (qr QuotaRun) Requests() int { return int(qr.Length.Seconds() * float64(qr.Rate)) }

// QuotaConfig is what every library of the quota runs is asked to do: 3
// attempts, each library's own delays and budget.
var QuotaConfig = peers.Config{Attempts: 3}

// QuotaRuns returns the four runs of the quota scenario, in table order:
// 200 GETs a second for 10 s, each with a deadline of 5 s, to a quota of
// 50 a second with a burst of 10, and to one that rises to 100 a second
// at 5 s, each without quota headers and with them.
func QuotaRuns() []QuotaRun {
	steady := QuotaRun{Rate: 200, Length: 10 * time.Second, Timeout: 5 * time.Second, Quota: 50, Burst: 10}
	rising := steady
	rising.Rise, rising.RiseAt = 100, 5*time.Second
	runs := []QuotaRun{steady, steady, rising, rising}
	runs[1].Announce, runs[3].Announce = true, true
	return runs
}

// QuotaLibraries returns the libraries of the quota tables, in table
// order: retryhttp with pacing and without, the AWS SDK's adaptive retry
// mode, and go-retryablehttp.
func QuotaLibraries() []peers.Library {
	return []peers.Library{
		{Name: peers.RetryHTTPPacing, New: peers.NewRetryHTTPPacing},
		{Name: peers.RetryHTTP, New: peers.NewRetryHTTP},
		{Name: peers.AWSAdaptive, New: peers.NewAWSAdaptive},
		{Name: peers.RetryableHTTP, New: peers.NewRetryableHTTP},
	}
}

// A QuotaResult is what one run measured. The server's figures count
// attempts, from the first second on (the burst spent, the client
// throttled at least once) to the last attempt that reached it.
type QuotaResult struct {
	Requests int           // requests started
	OK       int           // requests answered 200
	Deadline int           // requests that failed their deadline
	Paced    int           // requests refused by pacing (a *pace.Error)
	Errs     int           // other errors
	P50, P99 time.Duration // of every request, from its start to its answer or error

	Reached   int           // attempts that reached the server from 1 s on
	Throttled int           // of them, those answered 429
	Admitted  int           // of them, those admitted
	Allowed   float64       // requests the quota allowed from 1 s to the last attempt, the burst aside
	Span      time.Duration // from 1 s to the last attempt
	// Late counts the attempts that reached the server after their
	// deadline, over the whole run, MaxLate says how long after it the
	// latest of them did, and SentLate counts the attempts the library
	// handed to its base transport after their deadline (net/http sends
	// them unless it sees their context done first).
	Late     int
	MaxLate  time.Duration
	SentLate int
	// ToRise is, on a rising quota, the time from the rise until the
	// server first admitted 90% of the new quota in a second (the end of
	// the first window of a second, starting at the rise or later, 10 ms
	// apart, that held as many), -1 if it never did.
	ToRise time.Duration
}

// ThrottledShare is the share of the attempts reaching the server from 1 s
// on that were answered 429.
func (r QuotaResult) ThrottledShare() float64 {
	return float64(r.Throttled) / float64(max(r.Reached, 1))
}

// OfQuota is the share of the quota the server admitted from 1 s on.
func (r QuotaResult) OfQuota() float64 { return float64(r.Admitted) / max(r.Allowed, 1) }

// PerSecond is the rate at which the server admitted requests from 1 s on.
func (r QuotaResult) PerSecond() float64 { return float64(r.Admitted) / max(r.Span.Seconds(), 1e-9) }

// DeadlineHeader carries an attempt's deadline, in Unix nanoseconds, from
// the base under the library to the quota server, which counts the
// attempts that arrive after it.
const DeadlineHeader = "X-Deadline"

// stampDeadline is a base transport that sends each attempt's deadline in
// DeadlineHeader, on a copy of the attempt, and counts in late the
// attempts it is given after their deadline.
type stampDeadline struct {
	base http.RoundTripper
	late *atomic.Int64
}

func (s stampDeadline) RoundTrip(req *http.Request) (*http.Response, error) {
	dl, ok := req.Context().Deadline()
	if !ok {
		return s.base.RoundTrip(req)
	}
	r := req.WithContext(req.Context())
	r.Header = req.Header.Clone()
	r.Header.Set(DeadlineHeader, strconv.FormatInt(dl.UnixNano(), 10))
	if time.Now().After(dl) {
		s.late.Add(1)
	}
	return s.base.RoundTrip(r)
}

func (s stampDeadline) CloseIdleConnections() {
	if c, ok := s.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// quota is the server's token bucket, and what it admitted and refused.
type quota struct {
	run QuotaRun

	mu       sync.Mutex
	start    time.Time
	late     int           // attempts that arrived after their deadline
	maxLate  time.Duration // by how much the latest of them did
	tokens   float64
	last     time.Duration   // since start, of the last refill
	admitted []time.Duration // since start, in order
	refused  []time.Duration
	failed   int // admitted attempts answered 500 (QuotaRun.Fail)
}

func newQuota(run QuotaRun) *quota { return &quota{run: run, tokens: run.Burst} }

// begin starts the quota's clock: the bucket is full at start.
func (q *quota) begin(start time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.start = start
}

// filled returns the tokens the quota grants from the start to at, the
// burst aside.
func (q *quota) filled(at time.Duration) float64 {
	if q.run.Rise == 0 || at <= q.run.RiseAt {
		return q.run.Quota * at.Seconds()
	}
	return q.run.Quota*q.run.RiseAt.Seconds() + q.run.Rise*(at-q.run.RiseAt).Seconds()
}

// rate returns the quota a second at at.
func (q *quota) rate(at time.Duration) float64 {
	if q.run.Rise > 0 && at >= q.run.RiseAt {
		return q.run.Rise
	}
	return q.run.Quota
}

// serve answers one attempt: 200 while the bucket holds a token (or 500,
// for the run's share Fail of them), 429 with Retry-After: 1 otherwise,
// announcing the bucket when the run does.
func (q *quota) serve(w http.ResponseWriter, r *http.Request, attempt int) {
	dl, err := strconv.ParseInt(r.Header.Get(DeadlineHeader), 10, 64)
	q.mu.Lock()
	if late := time.Duration(time.Now().UnixNano() - dl); err == nil && late > 0 {
		q.late++
		q.maxLate = max(q.maxLate, late)
	}
	at := time.Since(q.start)
	q.tokens = min(q.run.Burst, q.tokens+q.filled(at)-q.filled(q.last))
	q.last = at
	admit := q.tokens >= 1
	fail := admit && q.run.Fail > 0 && unitHash(q.run.Seed, r.Header.Get(IDHeader), attempt) < q.run.Fail
	if admit {
		q.tokens--
		q.admitted = append(q.admitted, at)
		if fail {
			q.failed++
		}
	} else {
		q.refused = append(q.refused, at)
	}
	tokens := q.tokens
	q.mu.Unlock()

	if q.run.Announce {
		full := time.Duration(math.Ceil((q.run.Burst-tokens)/q.rate(at)*1000)) * time.Millisecond
		w.Header().Set("X-Ratelimit-Limit-Requests", strconv.Itoa(int(q.run.Burst)))
		w.Header().Set("X-Ratelimit-Remaining-Requests", strconv.Itoa(int(tokens)))
		w.Header().Set("X-Ratelimit-Reset-Requests", full.String())
	}
	if !admit {
		w.Header().Set("Retry-After", "1")
		http.Error(w, http.StatusText(http.StatusTooManyRequests), http.StatusTooManyRequests)
		return
	}
	if fail {
		http.Error(w, http.StatusText(http.StatusInternalServerError), http.StatusInternalServerError)
		return
	}
	_, _ = w.Write([]byte("ok\n"))
}

// Run runs qr through lib over a fresh base and returns what it measured.
// It stops starting requests once ctx is done.
func (qr QuotaRun) Run(ctx context.Context, lib peers.Library) QuotaResult {
	q := newQuota(qr)
	srv := NewServer(q.serve)
	base := peers.NewBase()
	var sentLate atomic.Int64
	cl := client(lib, stampDeadline{base, &sentLate}, QuotaConfig)

	type result struct {
		Outcome
		deadline bool
	}
	n := qr.Requests()
	out := make([]result, n)
	gap := time.Second / time.Duration(qr.Rate)
	timer := time.NewTimer(0)
	defer timer.Stop()
	var wg sync.WaitGroup
	start := time.Now()
	q.begin(start)
	for i := range n {
		// Waiting for each request's time paces the offered load; it
		// synchronises nothing.
		timer.Reset(time.Until(start.Add(time.Duration(i) * gap)))
		select {
		case <-ctx.Done():
		case <-timer.C:
		}
		if ctx.Err() != nil {
			out = out[:i]
			break
		}
		wg.Go(func() {
			rctx, cancel := context.WithTimeout(ctx, qr.Timeout)
			defer cancel()
			o := Send(rctx, cl, http.MethodGet, srv.URL+"/v1/items", id("q", i), "", nil, false)
			out[i] = result{o, o.Err != nil && errors.Is(rctx.Err(), context.DeadlineExceeded)}
		})
	}
	wg.Wait()
	cl.CloseIdleConnections()
	srv.Close()

	res := QuotaResult{Requests: len(out), SentLate: int(sentLate.Load()), ToRise: -1}
	lat := make([]time.Duration, 0, len(out))
	for _, o := range out {
		lat = append(lat, o.Latency)
		switch {
		case o.OK:
			res.OK++
		case errors.Is(o.Err, pace.ErrWaitTooLong):
			res.Paced++
		case o.deadline:
			res.Deadline++
		case o.Err != nil:
			res.Errs++
		}
	}
	slices.Sort(lat)
	res.P50, res.P99 = quantile(lat, 0.50), quantile(lat, 0.99)

	q.mu.Lock()
	defer q.mu.Unlock()
	res.Late, res.MaxLate = q.late, q.maxLate
	end := q.last + time.Nanosecond
	res.Admitted = count(q.admitted, time.Second, end)
	res.Throttled = count(q.refused, time.Second, end)
	res.Reached = res.Admitted + res.Throttled
	res.Allowed = q.filled(end) - q.filled(time.Second)
	res.Span = end - time.Second
	if qr.Rise > 0 {
		want := int(math.Ceil(0.9 * qr.Rise))
		for at := qr.RiseAt; at < end; at += 10 * time.Millisecond {
			if count(q.admitted, at, at+time.Second) >= want {
				res.ToRise = at + time.Second - qr.RiseAt
				break
			}
		}
	}
	return res
}

// count returns how many of sorted fall in [from, to).
func count(sorted []time.Duration, from, to time.Duration) int {
	i, _ := slices.BinarySearch(sorted, from)
	j, _ := slices.BinarySearch(sorted, to)
	return j - i
}

// Quota runs the quota scenario: every library of QuotaLibraries through
// every run of QuotaRuns, one after the other, a table for each run.
func Quota(ctx context.Context, _ Params) []Table {
	var tables []Table
	for _, qr := range QuotaRuns() {
		tb := qr.table()
		for _, lib := range QuotaLibraries() {
			tb.Add(qr.cells(lib.Name, qr.Run(ctx, lib))...)
		}
		tables = append(tables, tb)
	}
	return tables
}

// table returns the empty table of qr's results.
func (qr QuotaRun) table() Table {
	shape := fmt.Sprintf("a quota of %g a second", qr.Quota)
	if qr.Rise > 0 {
		shape = fmt.Sprintf("a quota of %g a second, %g from %g s on", qr.Quota, qr.Rise, qr.RiseAt.Seconds())
	}
	headers := "without quota headers"
	if qr.Announce {
		headers = "the bucket announced on every answer"
	}
	tb := Table{
		Title: "quota: " + shape + ", " + headers,
		Note: fmt.Sprintf("%d GETs a second for %g s (open loop: each started at its time on a goroutine of its own), "+
			"each with a deadline of %g s, to a loopback server with a token bucket of %s (burst %g) that answers "+
			"429 with Retry-After: 1 beyond it; %s. 429s: attempts answered 429 from 1 s on, and their share of the "+
			"attempts that reached the server then. Admitted: requests the server admitted a second from 1 s to its "+
			"last attempt, and their share of what the quota allowed then. Latency: of every request, from its start "+
			"to its answer or error. Late: attempts that reached the server after their deadline (in brackets, how "+
			"long after it the latest did). 3 attempts, each "+
			"library's own delays and budget.",
			qr.Rate, qr.Length.Seconds(), qr.Timeout.Seconds(), shape, qr.Burst, headers),
		Header: []string{"library", "429s after 1 s", "succeeded", "admitted a second", "p50", "p99",
			"failed their deadline", "late at the server", "refused by pacing"},
	}
	if qr.Rise > 0 {
		tb.Header = append(tb.Header, fmt.Sprintf("time to %g/s", math.Ceil(0.9*qr.Rise)))
	}
	return tb
}

// cells returns the row of lib's result r.
func (qr QuotaRun) cells(lib string, r QuotaResult) []string {
	paced := "–"
	if lib == peers.RetryHTTPPacing {
		paced = strconv.Itoa(r.Paced)
	}
	row := []string{lib,
		fmt.Sprintf("%d (%s)", r.Throttled, Percent(r.Throttled, r.Reached)),
		fmt.Sprintf("%d (%s)", r.OK, Percent(r.OK, r.Requests)),
		fmt.Sprintf("%.1f (%.1f%%)", r.PerSecond(), 100*r.OfQuota()),
		Millis(r.P50), Millis(r.P99),
		strconv.Itoa(r.Deadline), strconv.Itoa(r.Late), paced,
	}
	if r.Late > 0 {
		row[7] += " (" + micros(r.MaxLate) + ")"
	}
	if r.Errs > 0 {
		row[6] += fmt.Sprintf(" (%d other errors)", r.Errs)
	}
	if qr.Rise > 0 {
		rise := "never"
		if r.ToRise >= 0 {
			rise = strconv.FormatFloat(r.ToRise.Seconds(), 'f', 2, 64) + " s"
		}
		row = append(row, rise)
	}
	return row
}

// micros formats d in microseconds below a millisecond, as Millis does
// from it on.
func micros(d time.Duration) string {
	if d < time.Millisecond {
		return strconv.FormatInt(d.Microseconds(), 10) + " µs"
	}
	return Millis(d)
}
