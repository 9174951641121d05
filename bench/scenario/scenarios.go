// Package scenario runs retrying HTTP clients against loopback servers in
// trouble (failing at random, down, recovering, throttling, resetting
// connections) and tabulates what each client and server saw. Servers count
// every attempt and connection; the request loops are bounded in count and
// in time, and synchronise on counters and channels, never on sleeps.
package scenario

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/retryhttp/retryhttp/bench/peers"
)

// Params sizes the scenarios.
type Params struct {
	Seed        uint64 // seeds the transient scenario's faults
	Concurrency int    // callers in flight in the closed-loop scenarios

	Transient int // requests in the transient scenario
	Outage    int // requests in the outage scenario

	RecoveryDown time.Duration // how long the server fails in the recovery scenario
	RecoveryLoad time.Duration // how long requests are started in the recovery scenario
	RecoveryRate int           // requests started per second in the recovery scenario

	RetryAfter int // requests in the retry-after scenario
	Herd       int // requests released at once in the herd scenario
	HerdRuns   int // runs of each herd row, of which the median is reported
	HerdBase   time.Duration
	ChainFirst int   // requests after which the chain scenario takes its first reading
	Chain      int   // requests in the chain scenario
	Post       int   // requests of each kind in the post and reset scenarios
	MemoryBody int64 // request body size in the memory scenario

	Download     int64 // response body size in the throughput scenario
	DownloadRuns int   // pairs of downloads (plain, retryhttp) there

	ThrottleHang           int           // requests in the throttling scenario's hanging outage
	ThrottleAttemptTimeout time.Duration // the attempt timeout there
	ThrottleRate           int           // requests started per second in the throttling recovery
	ThrottleUp             time.Duration // how long that load goes on after healing

	RescuedPosts                 int            // keyed POSTs answered 503, 503, 200 in the throttling scenarios
	RescuedRetryAfter            int            // GETs answered 429 with Retry-After: 1, then 200, there
	RescuedRetryAfterConcurrency int            // callers in flight in that run
	DeadlineChain                DeadlineParams // the deadline scenario

	// Fast is the configuration of the scenarios where delays do not
	// matter: the same small base delay for every library.
	Fast peers.Config
}

// DefaultParams returns the sizes of a full run.
func DefaultParams() Params {
	return Params{
		Seed:         1,
		Concurrency:  16,
		Transient:    2000,
		Outage:       2000,
		RecoveryDown: time.Second,
		RecoveryLoad: 2 * time.Second,
		RecoveryRate: 200,
		RetryAfter:   32,
		Herd:         100,
		HerdRuns:     3,
		HerdBase:     50 * time.Millisecond,
		ChainFirst:   50,
		Chain:        1000,
		Post:         200,
		MemoryBody:   256 << 20,
		Download:     256 << 20,
		DownloadRuns: 15,

		ThrottleHang:           400,
		ThrottleAttemptTimeout: 50 * time.Millisecond,
		ThrottleRate:           4000,
		ThrottleUp:             time.Second,

		RescuedPosts:                 64,
		RescuedRetryAfter:            256,
		RescuedRetryAfterConcurrency: 64,
		Fast:                         peers.Config{Attempts: 3, Base: time.Millisecond, Cap: 100 * time.Millisecond},
		DeadlineChain:                DefaultDeadlineParams(),
	}
}

// QuickParams returns smaller sizes, for a run of a few seconds per
// scenario.
func QuickParams() Params {
	p := DefaultParams()
	p.Transient, p.Outage = 500, 500
	p.RecoveryRate = 100
	p.RetryAfter = 16
	p.HerdRuns = 1
	p.Chain = 200
	p.Post = 50
	p.MemoryBody = 64 << 20
	p.Download, p.DownloadRuns = 64<<20, 5
	p.ThrottleHang = 160
	p.ThrottleRate = 2000
	p.RescuedRetryAfter = 128
	p.DeadlineChain.Requests = 60
	return p
}

// String lists the parameters, for the report.
func (p Params) String() string {
	return fmt.Sprintf("seed=%d concurrency=%d transient=%d outage=%d recovery=%v down, %v of load at %d/s "+
		"retry-after=%d herd=%d (median of %d runs, same base %v) chain=%d (first reading after %d) post=%d reset=%d memory=%d MiB "+
		"download=%d MiB (%d pairs of runs) "+
		"throttling: hang=%d (attempt timeout %v), recovery at %d/s for %v after healing, "+
		"rescued keyed POSTs=%d, rescued 429s=%d (%d at a time); "+
		"fast backoff: %d attempts, base %v doubling, cap %v; deadline: %d requests",
		p.Seed, p.Concurrency, p.Transient, p.Outage, p.RecoveryDown, p.RecoveryLoad, p.RecoveryRate,
		p.RetryAfter, p.Herd, p.HerdRuns, p.HerdBase, p.Chain, p.ChainFirst, p.Post, p.Post, p.MemoryBody>>20,
		p.Download>>20, p.DownloadRuns,
		p.ThrottleHang, p.ThrottleAttemptTimeout, p.ThrottleRate, p.ThrottleUp,
		p.RescuedPosts, p.RescuedRetryAfter, p.RescuedRetryAfterConcurrency,
		p.Fast.Attempts, p.Fast.Base, p.Fast.Cap, p.DeadlineChain.Requests)
}

// A Scenario produces one or more tables.
type Scenario struct {
	Name string
	Run  func(ctx context.Context, p Params) []Table
}

// All returns the scenarios in report order. Memory is not among them: it
// needs a child process per library (see Memory).
func All() []Scenario {
	return []Scenario{
		{"transient", Transient},
		{"outage", Outage},
		{"recovery", Recovery},
		{"retry-after", RetryAfter},
		{"herd", Herd},
		{"chain", Chain},
		{"post", Post},
		{"reset", Reset},
		{"throttling", Throttling},
		{"instances", Instances},
		{"tls", TLS},
		{"rescue", Rescue},
		{"deadline", Deadline},
		{"throughput", Throughput},
		{"quota", Quota},
		{"quota-burst", QuotaBurst},
	}
}

// client returns an http.Client whose transport is lib over base.
func client(lib peers.Library, base http.RoundTripper, c peers.Config) *http.Client {
	return &http.Client{Transport: lib.New(base, c)}
}

func id(prefix string, i int) string { return prefix + strconv.Itoa(i) }

// Transient runs the scenario in which 10% of attempts fail with 503, at
// random but the same for every library.
func Transient(ctx context.Context, p Params) []Table {
	t := Table{
		Title: "transient: 10% of attempts answer 503",
		Note: fmt.Sprintf("%d GETs, %d at a time; an attempt fails when a hash of (seed %d, request, attempt) "+
			"falls below 0.1, so every library meets the same faults. Connections are those the server accepted "+
			"(ideal %d, the client's concurrency). Fast backoff.", p.Transient, p.Concurrency, p.Seed, p.Concurrency),
		Header: []string{"library", "success", "failed requests", "amplification", "connections", "p50", "p99"},
	}
	libs := append(peers.All(), peers.Library{Name: peers.RetryHTTPHedging, New: peers.NewRetryHTTPHedging})
	for _, lib := range libs {
		srv := NewServer(FailRandomly(p.Seed, 0.10))
		hedges := peers.HedgesSent.Load()
		s := runTransient(ctx, srv, client(lib, peers.NewBase(), p.Fast), p)
		conns := strconv.FormatInt(srv.Conns(), 10)
		if lib.Name == peers.RetryHTTPHedging {
			// Over HTTP/1 a hedge needs a connection, and its loser
			// cancelled in flight closes one: counted apart.
			conns += " (" + strconv.FormatInt(peers.HedgesSent.Load()-hedges, 10) + " hedges)"
		}
		t.Add(lib.Name, s.SuccessRate(), strconv.Itoa(s.N-s.OK), Ratio(srv.Requests(), int64(s.N)),
			conns, Millis(s.P50), Millis(s.P99))
	}
	return []Table{t}
}

// runTransient sends p.Transient GETs through c to srv, p.Concurrency at a
// time, then closes both.
func runTransient(ctx context.Context, srv *Server, c *http.Client, p Params) Stats {
	out := Drive(ctx, p.Transient, p.Concurrency, func(ctx context.Context, i int) Outcome {
		return Send(ctx, c, http.MethodGet, srv.URL+"/items", id("t", i), "", nil, false)
	})
	c.CloseIdleConnections()
	srv.Close()
	return Summarise(out)
}

// OutageResult is what one library did to a server that is down.
type OutageResult struct {
	Requests      int
	OK            int // requests that got a 200: none, unless a library invents one
	ServerCalls   int64
	ServerConns   int64
	Amplification string
	Handshakes    Handshakes // over TLS
}

// RunOutage sends n GETs, concurrency at a time, through lib over base
// (each library's own default transport when base is nil) to a server that
// answers every attempt with 503.
func RunOutage(ctx context.Context, lib peers.Library, base http.RoundTripper, c peers.Config, n, concurrency int) OutageResult {
	return runOutage(ctx, NewServer(Fail(http.StatusServiceUnavailable)), client(lib, base, c), n, concurrency)
}

// runOutage sends n GETs through cl to srv, which answers every attempt
// with 503, concurrency at a time, then closes both.
func runOutage(ctx context.Context, srv *Server, cl *http.Client, n, concurrency int) OutageResult {
	out := Drive(ctx, n, concurrency, func(ctx context.Context, i int) Outcome {
		return Send(ctx, cl, http.MethodGet, srv.URL+"/items", id("o", i), "", nil, false)
	})
	cl.CloseIdleConnections()
	srv.Close()
	return OutageResult{
		Requests:      n,
		OK:            Summarise(out).OK,
		ServerCalls:   srv.Requests(),
		ServerConns:   srv.Conns(),
		Amplification: Ratio(srv.Requests(), int64(n)),
		Handshakes:    srv.Handshakes(),
	}
}

// Outage runs the scenario in which every attempt fails.
func Outage(ctx context.Context, p Params) []Table {
	shared := Table{
		Title: "outage: every attempt answers 503",
		Note: fmt.Sprintf("%d GETs, %d at a time, every library over the same kind of base transport "+
			"(http.DefaultTransport's settings with 128 idle connections per host). Amplification is "+
			"server requests per client request (ideal 1.00); connections are those the server accepted "+
			"(ideal %d, the client's concurrency). Fast backoff; budgets as each library has them by default.",
			p.Outage, p.Concurrency, p.Concurrency),
		Header: []string{"library", "amplification", "server requests", "connections"},
	}
	own := Table{
		Title: "outage, each library over its own default transport",
		Note: "The same run, but each library over the transport it uses when given none: retryhttp " +
			"go-cleanhttp's pooled transport with 100 idle connections per host, go-retryablehttp go-cleanhttp's " +
			"pooled transport as it is (GOMAXPROCS+1 idle connections per host), the AWS SDK its " +
			"BuildableClient's (10), the others http.DefaultTransport's settings (2).",
		Header: shared.Header,
	}
	for _, lib := range peers.WithBudgets() {
		r := RunOutage(ctx, lib, peers.NewBase(), p.Fast, p.Outage, p.Concurrency)
		shared.Add(lib.Name, r.Amplification, strconv.FormatInt(r.ServerCalls, 10), strconv.FormatInt(r.ServerConns, 10))
		r = RunOutage(ctx, lib, nil, p.Fast, p.Outage, p.Concurrency)
		own.Add(lib.Name, r.Amplification, strconv.FormatInt(r.ServerCalls, 10), strconv.FormatInt(r.ServerConns, 10))
	}
	return []Table{shared, own}
}

// Recovery runs the scenario in which the server fails for a while, then
// recovers, under a steady stream of requests.
func Recovery(ctx context.Context, p Params) []Table {
	n := int(p.RecoveryLoad.Seconds() * float64(p.RecoveryRate))
	t := Table{
		Title: fmt.Sprintf("recovery: 503 for %v, then healthy", p.RecoveryDown),
		Note: fmt.Sprintf("%d GETs started at a steady %d per second over %v (open loop: the same offered "+
			"load for every library); the server answers 503 for the first %v. Each library's own default "+
			"delays, 3 attempts, budgets as by default. \"Rescued\" is the success rate of the requests "+
			"started while the server was down; \"time to recover\" is how long after the server recovered "+
			"the last of those requests returned to its caller.", n, p.RecoveryRate, p.RecoveryLoad, p.RecoveryDown),
		Header: []string{"library", "success", "rescued", "amplification", "time to recover"},
	}
	for _, lib := range peers.All() {
		var healthy atomic.Int64
		healthy.Store(time.Now().Add(time.Hour).UnixNano())
		srv := NewServer(FailUntil(func() time.Time { return time.Unix(0, healthy.Load()) }))
		c := client(lib, peers.NewBase(), peers.Config{Attempts: 3})

		out := make([]Outcome, n)
		started := make([]time.Time, n)
		tick := time.NewTicker(time.Second / time.Duration(p.RecoveryRate))
		start := time.Now()
		recovered := start.Add(p.RecoveryDown)
		healthy.Store(recovered.UnixNano())
		var wg sync.WaitGroup
		for i := 0; i < n && ctx.Err() == nil; i++ {
			if i > 0 {
				<-tick.C // pacing the offered load, not synchronisation
			}
			started[i] = time.Now()
			wg.Go(func() {
				out[i] = Send(ctx, c, http.MethodGet, srv.URL+"/items", id("r", i), "", nil, false)
			})
		}
		tick.Stop()
		wg.Wait()
		c.CloseIdleConnections()
		srv.Close()

		var during, rescued int
		var last time.Time
		for i, o := range out {
			if started[i].Before(recovered) {
				during++
				if o.OK {
					rescued++
				}
				if o.Done.After(last) {
					last = o.Done
				}
			}
		}
		s := Summarise(out)
		t.Add(lib.Name, s.SuccessRate(), Percent(rescued, during), Ratio(srv.Requests(), int64(n)),
			Millis(max(0, last.Sub(recovered))))
	}
	return []Table{t}
}

// RetryAfter runs the scenario in which the first attempt of each request
// is throttled with Retry-After: 1.
func RetryAfter(ctx context.Context, p Params) []Table {
	t := Table{
		Title: "retry-after: 429 with Retry-After: 1, then 200",
		Note: fmt.Sprintf("%d GETs, %d at a time. The server measures the gap between the attempts of each "+
			"request; a retry honoured Retry-After when the gap is at least 1 s. Fast backoff (1 ms base), so "+
			"only Retry-After can make a library wait.", p.RetryAfter, p.Concurrency),
		Header: []string{"library", "retries", "waited ≥ 1 s", "shortest gap", "success"},
	}
	for _, lib := range peers.All() {
		srv := NewServer(ThrottleFirst("1"))
		c := client(lib, peers.NewBase(), p.Fast)
		out := Drive(ctx, p.RetryAfter, p.Concurrency, func(ctx context.Context, i int) Outcome {
			return Send(ctx, c, http.MethodGet, srv.URL+"/items", id("ra", i), "", nil, false)
		})
		c.CloseIdleConnections()
		srv.Close()
		var retries, waited int
		shortest := time.Duration(-1)
		for _, ts := range srv.Arrivals() {
			for k := 1; k < len(ts); k++ {
				gap := ts[k].Sub(ts[k-1])
				retries++
				if gap >= time.Second {
					waited++
				}
				if shortest < 0 || gap < shortest {
					shortest = gap
				}
			}
		}
		gap := "–"
		if shortest >= 0 {
			gap = Millis(shortest)
		}
		t.Add(lib.Name, strconv.Itoa(retries), fmt.Sprintf("%d (%s)", waited, Percent(waited, retries)), gap,
			Summarise(out).SuccessRate())
	}
	return []Table{t}
}

// HerdResult is what the server saw of a herd.
type HerdResult struct {
	Peak    int           // most arrivals in a 20 ms bucket after the first
	Retries int           // arrivals after the first of each request
	Span    time.Duration // from the first arrival to the last
	Buckets []int         // arrivals in each 20 ms bucket, the first included
	Stats   Stats
}

// HerdBucket is the width of the buckets in which the herd scenario counts
// arrivals.
const HerdBucket = 20 * time.Millisecond

// RunHerd releases n GETs at once through lib, each failing twice and then
// succeeding, and measures how the retries are spread. The client's
// connections are opened beforehand, by n requests that the server holds
// until all have arrived, so that the herd leaves together.
func RunHerd(ctx context.Context, lib peers.Library, c peers.Config, n int) HerdResult {
	arrived := make(chan struct{})
	var warm atomic.Int64
	herd := FailFirst(2, http.StatusServiceUnavailable)
	srv := NewServer(func(w http.ResponseWriter, r *http.Request, attempt int) {
		if r.URL.Path != "/warm" {
			herd(w, r, attempt)
			return
		}
		if warm.Add(1) == int64(n) {
			close(arrived)
		}
		select { // a barrier on the counter, bounded in time
		case <-arrived:
		case <-time.After(10 * time.Second):
		}
		OK(w, r, attempt)
	})
	defer srv.Close()
	cl := client(lib, peers.NewBase(), c)
	defer cl.CloseIdleConnections()
	Drive(ctx, n, n, func(ctx context.Context, _ int) Outcome {
		return Send(ctx, cl, http.MethodGet, srv.URL+"/warm", "", "", nil, false)
	})

	out := make([]Outcome, n)
	release := make(chan struct{})
	var ready, done sync.WaitGroup
	ready.Add(n)
	for i := range n {
		done.Go(func() {
			ready.Done()
			<-release
			out[i] = Send(ctx, cl, http.MethodGet, srv.URL+"/items", id("h", i), "", nil, false)
		})
	}
	ready.Wait()
	close(release)
	done.Wait()

	var first, last time.Time
	arrivals := srv.Arrivals()
	for _, ts := range arrivals {
		for _, at := range ts {
			if first.IsZero() || at.Before(first) {
				first = at
			}
			if at.After(last) {
				last = at
			}
		}
	}
	res := HerdResult{Span: last.Sub(first), Stats: Summarise(out)}
	res.Buckets = make([]int, int(res.Span/HerdBucket)+1)
	for _, ts := range arrivals {
		res.Retries += len(ts) - 1
		for _, at := range ts {
			res.Buckets[int(at.Sub(first)/HerdBucket)]++
		}
	}
	if len(res.Buckets) > 1 {
		res.Peak = slices.Max(res.Buckets[1:])
	}
	return res
}

// Herd runs the scenario in which many clients fail together, to see how
// their retries spread.
func Herd(ctx context.Context, p Params) []Table {
	header := []string{"library", "arrivals in the first 20 ms", "peak arrivals per 20 ms after the first 20 ms",
		"retries", "span", "success"}
	note := fmt.Sprintf("%d GETs released at one instant over warm connections; each fails twice (503) and then "+
		"succeeds. The server counts arrivals (first attempts and retries) in 20 ms buckets from the first "+
		"arrival; the first bucket holds the herd itself, and the retries that come back within 20 ms.", p.Herd)
	if p.HerdRuns > 1 {
		note += fmt.Sprintf(" Peak: the median of %d runs (the least and the most in brackets); the other "+
			"columns are from the median run.", p.HerdRuns)
	}
	defaults := Table{
		Title: "herd, each library's default backoff, budgets off",
		Note: note + " Each library's own default delays (go-retryablehttp 1 s, 2 s; the AWS SDK uniform in " +
			"[0, 2 s), [0, 4 s); failsafe-go none; retryhttp uniform in [0, 50 ms), [0, 100 ms); naive 50 ms, " +
			"100 ms); retryhttp WithoutBudget and the AWS SDK with ratelimit.None, to isolate the backoff.",
		Header: header,
	}
	same := Table{
		Title: fmt.Sprintf("herd, every library from the same %v base delay, budgets off", p.HerdBase),
		Note: note + fmt.Sprintf(" Every library from a %v base, doubling, in its own shape: full jitter for "+
			"retryhttp and the AWS SDK, none for the others.", p.HerdBase),
		Header: header,
	}
	budgets := Table{
		Title: "herd, default configuration with budgets",
		Note: note + " Default delays and each library's default budget (retryhttp's and the AWS SDK's: " +
			"500 tokens, 5 a retry), plus failsafe-go with its optional budget.",
		Header: header,
	}
	row := func(t *Table, lib peers.Library, c peers.Config) {
		runs := make([]HerdResult, max(1, p.HerdRuns))
		for i := range runs {
			runs[i] = RunHerd(ctx, lib, c, p.Herd)
		}
		slices.SortFunc(runs, func(a, b HerdResult) int { return a.Peak - b.Peak })
		r := runs[len(runs)/2]
		peak := strconv.Itoa(r.Peak)
		if len(runs) > 1 {
			peak += fmt.Sprintf(" (%d–%d)", runs[0].Peak, runs[len(runs)-1].Peak)
		}
		t.Add(lib.Name, strconv.Itoa(r.Buckets[0]), peak, strconv.Itoa(r.Retries), Millis(r.Span), r.Stats.SuccessRate())
	}
	for _, lib := range peers.All() {
		row(&defaults, lib, peers.Config{Attempts: 3, NoBudget: true})
		row(&same, lib, peers.Config{Attempts: 3, Base: p.HerdBase, Cap: 20 * time.Second, NoBudget: true})
	}
	for _, lib := range peers.WithBudgets() {
		row(&budgets, lib, peers.Config{Attempts: 3})
	}
	return []Table{defaults, same, budgets}
}

// A service is a loopback server whose handler calls the next service
// through a retrying client, and answers with its status.
type service struct {
	*Server
	client *http.Client
}

func newService(lib peers.Library, c peers.Config, next string) *service {
	s := &service{client: client(lib, peers.NewBase(), c)}
	s.Server = NewServer(func(w http.ResponseWriter, r *http.Request, _ int) {
		relay(s.client, next+r.URL.Path, w, r)
	})
	return s
}

// relay sends r's method to url through client, with r's context and
// identity, and answers 200 when url did, its status when it did not, and
// 502 when there was no answer.
func relay(client *http.Client, url string, w http.ResponseWriter, r *http.Request) {
	req, err := http.NewRequestWithContext(r.Context(), r.Method, url, nil)
	if err != nil {
		panic(err)
	}
	req.Header.Set(IDHeader, r.Header.Get(IDHeader))
	resp, err := client.Do(req)
	if err != nil {
		http.Error(w, http.StatusText(http.StatusBadGateway), http.StatusBadGateway)
		return
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		http.Error(w, http.StatusText(resp.StatusCode), resp.StatusCode)
		return
	}
	OK(w, r, 0)
}

func (s *service) close() {
	s.client.CloseIdleConnections()
	s.Server.Close()
}

// ChainResult is what the last service of a chain saw.
type ChainResult struct {
	FirstPerRequest string // calls at D per request to A, over the first reading
	AllPerRequest   string // calls at D per request to A, over the whole run
	Stats           Stats
}

// RunChain sends n GETs to A in a chain A -> B -> C -> D where A, B and C
// call the next through lib and D always answers 503, taking a first
// reading after first requests.
func RunChain(ctx context.Context, lib peers.Library, c peers.Config, first, n, concurrency int) ChainResult {
	d := NewServer(Fail(http.StatusServiceUnavailable))
	defer d.Close()
	cs := newService(lib, c, d.URL)
	defer cs.close()
	bs := newService(lib, c, cs.URL)
	defer bs.close()
	as := newService(lib, c, bs.URL)
	defer as.close()
	driver := &http.Client{Transport: peers.NewBase()}
	defer driver.CloseIdleConnections()

	send := func(offset int) func(ctx context.Context, i int) Outcome {
		return func(ctx context.Context, i int) Outcome {
			return Send(ctx, driver, http.MethodGet, as.URL+"/items", id("c", offset+i), "", nil, false)
		}
	}
	out := Drive(ctx, first, concurrency, send(0))
	res := ChainResult{FirstPerRequest: Ratio(d.Requests(), as.Requests())}
	out = append(out, Drive(ctx, n-first, concurrency, send(first))...)
	res.AllPerRequest = Ratio(d.Requests(), as.Requests())
	res.Stats = Summarise(out)
	return res
}

// Chain runs the scenario in which retries multiply down a chain of
// services.
func Chain(ctx context.Context, p Params) []Table {
	t := Table{
		Title: "chain: A -> B -> C -> D, D always answers 503",
		Note: fmt.Sprintf("A, B and C are loopback services whose handlers call the next through the library "+
			"(each service its own client, as separate processes would have) and pass a failure's status on; "+
			"D, the last, always answers 503. A plain client sends %d GETs to A, %d at a time. The table "+
			"gives the calls reaching D per request to A, over the first %d requests and over all %d "+
			"(naive retries give 3³ = 27). Fast backoff; budgets as each library has them by default.",
			p.Chain, p.Concurrency, p.ChainFirst, p.Chain),
		Header: []string{"library", fmt.Sprintf("D calls per request, first %d", p.ChainFirst),
			fmt.Sprintf("D calls per request, all %d", p.Chain), "success"},
	}
	for _, lib := range peers.WithBudgets() {
		r := RunChain(ctx, lib, p.Fast, p.ChainFirst, p.Chain, p.Concurrency)
		t.Add(lib.Name, r.FirstPerRequest, r.AllPerRequest, r.Stats.SuccessRate())
	}
	return []Table{t}
}

// executions returns the arrivals at srv of the requests whose identity
// starts with prefix, per request of n.
func executions(arrivals map[string][]time.Time, prefix string, n int) string {
	total := 0
	for id, ts := range arrivals {
		if strings.HasPrefix(id, prefix) {
			total += len(ts)
		}
	}
	return Ratio(int64(total), int64(n))
}

var postBody = []byte(`{"order":"42","amount":"9.99"}`)

func newPostBody() io.Reader { return bytes.NewReader(postBody) }

// Post runs the scenario in which a POST fails twice with 503, then
// succeeds.
func Post(ctx context.Context, p Params) []Table {
	t := Table{
		Title: "post: 503 twice, then 200",
		Note: fmt.Sprintf("%d POSTs with an Idempotency-Key and %d without (bodies with GetBody), %d at a "+
			"time. Executions are the handler runs per request, as the server counts them: a POST without "+
			"a key must execute exactly once. Fast backoff, budgets off (retryhttp WithoutBudget, the AWS "+
			"SDK ratelimit.None) to isolate how each library treats a POST: with their default budgets, "+
			"every keyed request here costs them 5 tokens net (two retries paid, the successful one "+
			"refunded), so retries stop after about 100 requests.", p.Post, p.Post, p.Concurrency),
		Header: []string{"library", "keyed: executions", "keyed: success", "key-less: executions", "key-less: success"},
	}
	noBudget := p.Fast
	noBudget.NoBudget = true
	for _, lib := range peers.All() {
		srv := NewServer(FailFirst(2, http.StatusServiceUnavailable))
		c := client(lib, peers.NewBase(), noBudget)
		keyed := Drive(ctx, p.Post, p.Concurrency, func(ctx context.Context, i int) Outcome {
			return Send(ctx, c, http.MethodPost, srv.URL+"/orders", id("k", i), id("key-", i), newPostBody, true)
		})
		keyless := Drive(ctx, p.Post, p.Concurrency, func(ctx context.Context, i int) Outcome {
			return Send(ctx, c, http.MethodPost, srv.URL+"/orders", id("n", i), "", newPostBody, true)
		})
		c.CloseIdleConnections()
		srv.Close()
		a := srv.Arrivals()
		t.Add(lib.Name, executions(a, "k", p.Post), Summarise(keyed).SuccessRate(),
			executions(a, "n", p.Post), Summarise(keyless).SuccessRate())
	}
	return []Table{t}
}

// Reset runs the scenario in which the first attempt of each request is
// read and then answered with a TCP reset.
func Reset(ctx context.Context, p Params) []Table {
	t := Table{
		Title: "reset: the connection is reset after the request is read, on each request's first attempt",
		Note: fmt.Sprintf("%d GETs and %d POSTs without an Idempotency-Key (bodies with GetBody), %d at a time. "+
			"The server reads each request, then on its first attempt hijacks the connection and closes it "+
			"with SO_LINGER 0; later attempts get 200. Executions are handler runs per request. Fast backoff.",
			p.Post, p.Post, p.Concurrency),
		Header: []string{"library", "GET: success", "GET: executions", "key-less POST: success", "key-less POST: executions"},
	}
	for _, lib := range peers.All() {
		srv := NewServer(ResetFirst)
		c := client(lib, peers.NewBase(), p.Fast)
		gets := Drive(ctx, p.Post, p.Concurrency, func(ctx context.Context, i int) Outcome {
			return Send(ctx, c, http.MethodGet, srv.URL+"/items", id("g", i), "", nil, false)
		})
		posts := Drive(ctx, p.Post, p.Concurrency, func(ctx context.Context, i int) Outcome {
			return Send(ctx, c, http.MethodPost, srv.URL+"/orders", id("p", i), "", newPostBody, true)
		})
		c.CloseIdleConnections()
		srv.Close()
		a := srv.Arrivals()
		t.Add(lib.Name, Summarise(gets).SuccessRate(), executions(a, "g", p.Post),
			Summarise(posts).SuccessRate(), executions(a, "p", p.Post))
	}
	return []Table{t}
}
