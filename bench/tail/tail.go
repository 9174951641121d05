// Package tail measures what hedging does to the latency tail of requests to
// a loopback server whose latency is heavy-tailed, and the extra load it
// adds, for retryhttp and failsafe-go's hedgepolicy over the same base
// transport, and what it adds when the server turns slow for every request
// or fails them all.
package tail

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/budget"
	"github.com/failsafe-go/failsafe-go/failsafehttp"
	"github.com/failsafe-go/failsafe-go/hedgepolicy"
	"github.com/hashicorp/go-cleanhttp"
	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/hedge"
)

// idHeader carries a logical request's number, the same on its hedges.
const idHeader = "X-Request-Id"

// Mode is how the server answers.
type Mode int

const (
	// HeavyTail answers most requests in Fast, and a fraction Tail of them
	// in Slow to 2·Slow.
	HeavyTail Mode = iota
	// Overload is HeavyTail for the first half of the logical requests;
	// from the second half on, every attempt takes Overloaded.
	Overload
	// Outage answers every attempt 503 at once.
	Outage
)

// Params sizes a run.
type Params struct {
	Requests    int
	Concurrency int
	Fast        time.Duration
	Slow        time.Duration
	Tail        float64
	Overloaded  time.Duration
	Seed        uint64
	// Warmup requests go first, unmeasured and at the same concurrency,
	// so that the figures are those of a client that has seen its host
	// under this load before: a quantile delay needs 100 latencies.
	Warmup int
	// HTTP2 speaks HTTP/2 without TLS to the server, where cancelling a
	// request resets its stream and keeps the connection.
	HTTP2 bool
}

// DefaultParams are the issue's: 5000 GETs at 16 concurrent, 1 ms, or for
// 2% of attempts 100-200 ms; when overloaded, 30 ms for everyone.
func DefaultParams() Params {
	return Params{Requests: 5000, Concurrency: 16, Fast: time.Millisecond, Slow: 100 * time.Millisecond,
		Tail: 0.02, Overloaded: 30 * time.Millisecond, Seed: 1, Warmup: 200}
}

// server is the loopback server, counting attempts per phase.
type server struct {
	*httptest.Server
	p    Params
	mode Mode

	mu       sync.Mutex
	rng      *rand.Rand
	arrivals [2]int64 // by phase: logical requests below, and from, half
	proto    string   // the protocol of the last request
}

func newServer(p Params, mode Mode) *server {
	s := &server{p: p, mode: mode, rng: rand.New(rand.NewPCG(p.Seed, 7))}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	if p.HTTP2 {
		s.Server.Config.Protocols = h2c()
	}
	s.Server.Start()
	return s
}

func (s *server) serve(w http.ResponseWriter, r *http.Request) {
	id, _ := strconv.Atoi(r.Header.Get(idHeader))
	phase := 0
	if id >= s.p.Requests/2 {
		phase = 1
	}
	s.mu.Lock()
	s.arrivals[phase]++
	s.proto = r.Proto
	draw := s.rng.Float64()
	jitter := s.rng.Float64()
	s.mu.Unlock()
	if s.mode == Outage {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	d := s.p.Fast
	switch {
	case s.mode == Overload && phase == 1:
		d = s.p.Overloaded
	case draw < s.p.Tail:
		d = s.p.Slow + time.Duration(jitter*float64(s.p.Slow))
	}
	t := time.NewTimer(d) // the server's own latency
	defer t.Stop()
	select {
	case <-t.C:
		io.WriteString(w, "ok")
	case <-r.Context().Done():
	}
}

// Result is what one client saw.
type Result struct {
	Name             string
	P50, P99, P999   time.Duration
	Max              time.Duration
	Extra            float64 // attempts beyond one per request, as a fraction of requests
	ExtraSecondHalf  float64 // the same, for the second half of the requests
	Hedges           int64   // hedges the client reported sending
	Errors, Failures int     // requests that ended in an error, or not in a 200
	Canceled         int     // of Errors, those that were context.Canceled, which the caller never asks for
	Proto            string  // the protocol the server last saw
}

// A Client is a client under test, made over base; hedges counts the
// hedges it sends.
type Client struct {
	Name string
	New  func(base http.RoundTripper, hedges *atomic.Int64) http.RoundTripper
}

// Clients are the clients the scenarios compare.
func Clients() []Client {
	return []Client{
		{"no hedging", func(base http.RoundTripper, _ *atomic.Int64) http.RoundTripper { return base }},
		{"retryhttp, fixed 10 ms", func(base http.RoundTripper, h *atomic.Int64) http.RoundTripper {
			return retryhttp.New(retryhttp.WithBase(base), retryhttp.WithHedging(hedge.Delay(10*time.Millisecond)),
				retryhttp.WithOnHedge(func(retryhttp.HedgeEvent) { h.Add(1) }))
		}},
		{"retryhttp, quantile (default)", func(base http.RoundTripper, h *atomic.Int64) http.RoundTripper {
			return retryhttp.New(retryhttp.WithBase(base), retryhttp.WithHedging(),
				retryhttp.WithOnHedge(func(retryhttp.HedgeEvent) { h.Add(1) }))
		}},
		{"failsafe-go, fixed 10 ms", func(base http.RoundTripper, h *atomic.Int64) http.RoundTripper {
			return failsafehttp.NewRoundTripper(base, hedgepolicy.NewBuilderWithDelay[*http.Response](10*time.Millisecond).
				WithBudget(budget.New()).OnHedge(func(failsafe.ExecutionEvent[*http.Response]) { h.Add(1) }).Build())
		}},
		{"failsafe-go, quantile 0.95", func(base http.RoundTripper, h *atomic.Int64) http.RoundTripper {
			return failsafehttp.NewRoundTripper(base, hedgepolicy.NewBuilderWithDelayQuantile[*http.Response](0.95, 1000, 50).
				WithBudget(budget.New()).OnHedge(func(failsafe.ExecutionEvent[*http.Response]) { h.Add(1) }).Build())
		}},
	}
}

// Run sends p.Requests GETs at p.Concurrency through c to a new server in
// mode, and measures what the client saw and what the server received.
func Run(p Params, mode Mode, c Client) (Result, error) {
	srv := newServer(p, mode)
	defer srv.Close()
	base := cleanhttp.DefaultPooledTransport()
	base.MaxIdleConnsPerHost = 100
	if p.HTTP2 {
		base.Protocols = h2c()
	}
	defer base.CloseIdleConnections()
	var hedges atomic.Int64
	client := &http.Client{Transport: c.New(base, &hedges), Timeout: 10 * time.Second}

	// Warm up at the same concurrency, on logical requests numbered below
	// 0: the first phase.
	get := func(id int) (*http.Response, error) {
		req, err := http.NewRequest(http.MethodGet, srv.URL+"/item", nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set(idHeader, strconv.Itoa(id))
		return client.Do(req)
	}
	concurrently(p.Warmup, p.Concurrency, func(i int) {
		if resp, err := get(-1 - i); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	})
	srv.mu.Lock()
	srv.arrivals = [2]int64{}
	srv.mu.Unlock()
	hedges.Store(0)

	latencies := make([]time.Duration, p.Requests)
	var errs, canceled, failures atomic.Int64
	concurrently(p.Requests, p.Concurrency, func(i int) {
		start := time.Now()
		resp, err := get(i)
		if err != nil {
			errs.Add(1)
			if errors.Is(err, context.Canceled) {
				canceled.Add(1)
			}
			latencies[i] = time.Since(start)
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		latencies[i] = time.Since(start)
		if resp.StatusCode != http.StatusOK {
			failures.Add(1)
		}
	})
	slices.Sort(latencies)
	q := func(f float64) time.Duration { return latencies[min(int(f*float64(len(latencies))), len(latencies)-1)] }
	srv.mu.Lock()
	a0, a1, proto := srv.arrivals[0], srv.arrivals[1], srv.proto
	srv.mu.Unlock()
	half := float64(p.Requests - p.Requests/2)
	return Result{
		Name: c.Name, P50: q(0.50), P99: q(0.99), P999: q(0.999), Max: latencies[len(latencies)-1],
		Extra:           float64(a0+a1)/float64(p.Requests) - 1,
		ExtraSecondHalf: float64(a1)/half - 1,
		Hedges:          hedges.Load(),
		Errors:          int(errs.Load()), Canceled: int(canceled.Load()), Failures: int(failures.Load()), Proto: proto,
	}, nil
}

// h2c returns the protocols of HTTP/2 without TLS, alone.
func h2c() *http.Protocols {
	p := new(http.Protocols)
	p.SetUnencryptedHTTP2(true)
	return p
}

// concurrently calls fn(i) for every i below n, from c goroutines.
func concurrently(n, c int, fn func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range c {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				fn(i)
			}
		})
	}
	wg.Wait()
}

// ms formats d in milliseconds.
func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }

// Table prints results as a Markdown table for mode.
func Table(w io.Writer, mode Mode, results []Result) {
	switch mode {
	case HeavyTail:
		fmt.Fprintln(w, "| client | p50 | p99 | p99.9 | max | extra requests | hedges |")
		fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
		for _, r := range results {
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %.1f%% | %d |\n", r.Name, ms(r.P50), ms(r.P99), ms(r.P999), ms(r.Max), 100*r.Extra, r.Hedges)
		}
	case Overload:
		fmt.Fprintln(w, "| client | p50 | p99 | extra requests, heavy-tailed half | extra requests, overloaded half |")
		fmt.Fprintln(w, "|---|---|---|---|---|")
		for _, r := range results {
			first := (r.Extra*2 - r.ExtraSecondHalf)
			fmt.Fprintf(w, "| %s | %s | %s | %.1f%% | %.1f%% |\n", r.Name, ms(r.P50), ms(r.P99), 100*first, 100*r.ExtraSecondHalf)
		}
	case Outage:
		fmt.Fprintln(w, "| client | hedges | extra requests (retries and hedges) | responses not 200 |")
		fmt.Fprintln(w, "|---|---|---|---|")
		for _, r := range results {
			fmt.Fprintf(w, "| %s | %d | %.1f%% | %d |\n", r.Name, r.Hedges, 100*r.Extra, r.Failures)
		}
	}
}
