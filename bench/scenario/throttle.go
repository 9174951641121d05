package scenario

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/retryhttp/retryhttp/bench"
	"github.com/retryhttp/retryhttp/bench/peers"
)

// refusedCount returns how many outcomes are refusals of a throttler or
// breaker, sent to no server.
func refusedCount(out []Outcome) int {
	n := 0
	for _, o := range out {
		if peers.Refused(o.Err) {
			n++
		}
	}
	return n
}

// Hang holds every attempt until the client gives up on it, or 10 s.
func Hang(w http.ResponseWriter, r *http.Request, attempt int) {
	select {
	case <-r.Context().Done():
	case <-time.After(10 * time.Second):
		OK(w, r, attempt)
	}
}

// ThrottleResult is what one library did in a closed-loop run of the
// throttling scenarios.
type ThrottleResult struct {
	Stats       Stats
	Refused     int
	ServerCalls int64
	ServerConns int64
}

// RunThrottle sends n GETs, concurrency at a time, through lib to a server
// answering with b.
func RunThrottle(ctx context.Context, lib peers.Library, c peers.Config, b Behaviour, n, concurrency int, prefix string) ThrottleResult {
	return runThrottle(ctx, lib, peers.NewBase(), c, b, false, n, concurrency, prefix)
}

// RunRescued sends n requests, concurrency at a time, through lib over base
// to a server answering with b: GETs, or, when keyed, POSTs with a body and
// an Idempotency-Key, which every library may resend.
func RunRescued(ctx context.Context, lib peers.Library, base *http.Transport, c peers.Config, b Behaviour, keyed bool, n, concurrency int, prefix string) ThrottleResult {
	return runThrottle(ctx, lib, base, c, b, keyed, n, concurrency, prefix)
}

func runThrottle(ctx context.Context, lib peers.Library, base *http.Transport, c peers.Config, b Behaviour, keyed bool, n, concurrency int, prefix string) ThrottleResult {
	srv := NewServer(b)
	cl := client(lib, base, c)
	out := Drive(ctx, n, concurrency, func(ctx context.Context, i int) Outcome {
		if keyed {
			return Send(ctx, cl, http.MethodPost, srv.URL+"/orders", id(prefix, i), id(prefix, i), newPostBody, true)
		}
		return Send(ctx, cl, http.MethodGet, srv.URL+"/items", id(prefix, i), "", nil, false)
	})
	cl.CloseIdleConnections()
	srv.Close()
	return ThrottleResult{Stats: Summarise(out), Refused: refusedCount(out), ServerCalls: srv.Requests(), ServerConns: srv.Conns()}
}

// RecoveryResult is what one library did across an outage and the healing
// after it.
type RecoveryResult struct {
	// ToSuccesses is the time from healing to the 100th success that
	// returned after it, or -1 when there were fewer.
	ToSuccesses time.Duration
	// DownCalls is the server requests made while it was down, per request
	// started then.
	DownCalls string
	// AfterOK is the success rate of the requests started after healing.
	AfterOK string
	// RefusedAfter is how many requests started after healing the client
	// refused without sending them.
	RefusedAfter int
}

// RunRecovery starts rate GETs a second, at an even pace, through lib, for
// down and then up, to a server that answers 503 until down has passed.
func RunRecovery(ctx context.Context, lib peers.Library, c peers.Config, rate int, down, up time.Duration) RecoveryResult {
	var healthy atomic.Int64
	healthy.Store(time.Now().Add(time.Hour).UnixNano())
	var downCalls atomic.Int64
	fail := Fail(http.StatusServiceUnavailable)
	srv := NewServer(func(w http.ResponseWriter, r *http.Request, attempt int) {
		if time.Now().UnixNano() < healthy.Load() {
			downCalls.Add(1)
			fail(w, r, attempt)
			return
		}
		OK(w, r, attempt)
	})
	cl := client(lib, peers.NewBase(), c)

	perTick := max(1, rate/1000)
	ticks := int((down + up) / time.Millisecond)
	out := make([]Outcome, perTick*ticks)
	started := make([]time.Time, len(out))
	tick := time.NewTicker(time.Millisecond)
	start := time.Now()
	healed := start.Add(down)
	healthy.Store(healed.UnixNano())
	var wg sync.WaitGroup
	for k := 0; k < ticks && ctx.Err() == nil; k++ {
		if k > 0 {
			<-tick.C // pacing the offered load, not synchronisation
		}
		for j := range perTick {
			i := k*perTick + j
			started[i] = time.Now()
			wg.Go(func() {
				out[i] = Send(ctx, cl, http.MethodGet, srv.URL+"/items", id("tr", i), "", nil, false)
			})
		}
	}
	tick.Stop()
	wg.Wait()
	cl.CloseIdleConnections()
	srv.Close()

	var okAfter []time.Time
	var during, after, afterOK, refusedAfter int
	for i, o := range out {
		if o.OK && !o.Done.Before(healed) {
			okAfter = append(okAfter, o.Done)
		}
		if started[i].Before(healed) {
			during++
			continue
		}
		after++
		if o.OK {
			afterOK++
		}
		if peers.Refused(o.Err) {
			refusedAfter++
		}
	}
	slices.SortFunc(okAfter, func(a, b time.Time) int { return a.Compare(b) })
	res := RecoveryResult{ToSuccesses: -1, DownCalls: Ratio(downCalls.Load(), int64(during)), AfterOK: Percent(afterOK, after),
		RefusedAfter: refusedAfter}
	if len(okAfter) >= 100 {
		res.ToSuccesses = okAfter[99].Sub(healed)
	}
	return res
}

// Throttling runs the scenarios of adaptive throttling: retryhttp with and
// without it, and failsafe-go's adaptive throttler and circuit breaker,
// against a server down (failing fast, and hanging), recovering, failing
// 10% and 60% of requests at random, failing first attempts that retries
// rescue, and healthy.
func Throttling(ctx context.Context, p Params) []Table {
	libs := peers.Throttlers()
	outage := Table{
		Title: "throttling: outage of a fast-failing server (503 to everything)",
		Note: fmt.Sprintf("%d GETs, %d at a time. Server requests per client request (retryhttp without throttling: "+
			"the first attempts and the retries its budget pays for); connections the server accepted; requests "+
			"refused by the client without being sent. Fast backoff, budgets as by default.", p.Outage, p.Concurrency),
		Header: []string{"library", "server requests per request", "connections", "refused", "p50"},
	}
	for _, lib := range libs {
		r := RunThrottle(ctx, lib, p.Fast, Fail(http.StatusServiceUnavailable), p.Outage, p.Concurrency, "to")
		outage.Add(lib.Name, Ratio(r.ServerCalls, int64(r.Stats.N)), strconv.FormatInt(r.ServerConns, 10),
			strconv.Itoa(r.Refused), Millis(r.Stats.P50))
	}

	hang := Table{
		Title: "throttling: outage of a hanging server",
		Note: fmt.Sprintf("%d GETs, %d at a time, to a server that never answers; each attempt is cut after %v "+
			"(retryhttp WithAttemptTimeout, failsafe-go a timeout policy inside the throttler or breaker). The "+
			"callers' latency, from sending to an answer or an error. Fast backoff, budgets as by default.",
			p.ThrottleHang, p.Concurrency, p.ThrottleAttemptTimeout),
		Header: []string{"library", "p50", "p99", "server requests per request", "refused"},
	}
	hc := p.Fast
	hc.AttemptTimeout = p.ThrottleAttemptTimeout
	for _, lib := range libs {
		r := RunThrottle(ctx, lib, hc, Hang, p.ThrottleHang, p.Concurrency, "th")
		hang.Add(lib.Name, Millis(r.Stats.P50), Millis(r.Stats.P99), Ratio(r.ServerCalls, int64(r.Stats.N)),
			strconv.Itoa(r.Refused))
	}

	recovery := Table{
		Title: fmt.Sprintf("throttling: 503 for %v, then healthy", p.RecoveryDown),
		Note: fmt.Sprintf("GETs started at a steady %d per second (open loop) for %v, the server answering 503 for "+
			"the first %v. The time from healing to the 100th success (at full traffic the 100 successes take "+
			"%v); the server requests per request started while it was down; the success rate of the requests "+
			"started after healing. Fast backoff, budgets as by default.",
			p.ThrottleRate, p.RecoveryDown+p.ThrottleUp, p.RecoveryDown, time.Duration(100*float64(time.Second)/float64(p.ThrottleRate))),
		Header: []string{"library", "healing to 100 successes", "server requests per request while down", "success after healing"},
	}
	for _, lib := range libs {
		r := RunRecovery(ctx, lib, p.Fast, p.ThrottleRate, p.RecoveryDown, p.ThrottleUp)
		took := "over " + Millis(p.ThrottleUp)
		if r.ToSuccesses >= 0 {
			took = Millis(r.ToSuccesses)
		}
		recovery.Add(lib.Name, took, r.DownCalls, r.AfterOK)
	}

	random := Table{
		Title: "throttling: a server failing 10% and 60% of attempts at random",
		Note: fmt.Sprintf("%d GETs, %d at a time; an attempt fails (503) when a hash of (seed %d, request, attempt) "+
			"falls below the rate, as in the transient scenario. Fast backoff, budgets as by default.",
			p.Transient, p.Concurrency, p.Seed),
		Header: []string{"library", "10%: success", "10%: refused", "10%: server requests per request",
			"60%: success", "60%: refused", "60%: server requests per request"},
	}
	for _, lib := range libs {
		cells := []string{lib.Name}
		for _, rate := range []float64{0.10, 0.60} {
			r := RunThrottle(ctx, lib, p.Fast, FailRandomly(p.Seed, rate), p.Transient, p.Concurrency, "tt")
			cells = append(cells, r.Stats.SuccessRate(), strconv.Itoa(r.Refused), Ratio(r.ServerCalls, int64(r.Stats.N)))
		}
		random.Add(cells...)
	}

	rescued := Table{
		Title: "throttling: a host whose requests all end in success, some after a retry",
		Note: fmt.Sprintf("Each request fails its first attempt (or two) and succeeds on a retry: %d GETs, %d at a "+
			"time, whose first attempt the server reads and then resets (a connection per attempt, as net/http "+
			"resends a GET by itself after a reset on a connection it reused); %d POSTs with an Idempotency-Key, "+
			"%d at a time, answered 503, 503 and then 200 (the default budget pays for about 90 such requests: "+
			"two retries, one refunded); %d GETs, %d at a time, answered 429 with Retry-After: 1 and then 200. "+
			"Success rate and requests refused; fast backoff, budgets as by default.",
			p.Transient, p.Concurrency, p.RescuedPosts, p.Concurrency, p.RescuedRetryAfter, p.RescuedRetryAfterConcurrency),
		Header: []string{"library", "reset GET: success", "refused", "keyed POST 503, 503, 200: success", "refused",
			"429 Retry-After: 1: success", "refused"},
	}
	for _, lib := range libs {
		cells := []string{lib.Name}
		fresh := peers.NewBase()
		fresh.DisableKeepAlives = true
		for _, r := range []ThrottleResult{
			RunRescued(ctx, lib, fresh, p.Fast, ResetFirst, false, p.Transient, p.Concurrency, "rr"),
			RunRescued(ctx, lib, peers.NewBase(), p.Fast, FailFirst(2, http.StatusServiceUnavailable), true, p.RescuedPosts, p.Concurrency, "rp"),
			RunRescued(ctx, lib, peers.NewBase(), p.Fast, ThrottleFirst("1"), false, p.RescuedRetryAfter, p.RescuedRetryAfterConcurrency, "ra"),
		} {
			cells = append(cells, r.Stats.SuccessRate(), strconv.Itoa(r.Refused))
		}
		rescued.Add(cells...)
	}

	healthy := Table{
		Title: "throttling: a healthy host",
		Note: "A bodiless GET answered 200 at once by an in-memory stub (bench.Stub), through each library: the " +
			"cost of the success path, with the added time over retryhttp without throttling. One run of " +
			"testing.Benchmark each; `go test -run '^$' -bench Throttlers -count 5 .` repeats them.",
		Header: []string{"library", "ns/op", "B/op", "allocs/op", "added ns/op"},
	}
	var plain float64
	for i, lib := range libs {
		r := testing.Benchmark(func(b *testing.B) { BenchThrottler(b, lib) })
		ns := float64(r.T.Nanoseconds()) / float64(r.N)
		if i == 0 {
			plain = ns
		}
		healthy.Add(lib.Name, strconv.FormatFloat(ns, 'f', 1, 64), strconv.FormatInt(r.AllocedBytesPerOp(), 10),
			strconv.FormatInt(r.AllocsPerOp(), 10), strconv.FormatFloat(ns-plain, 'f', 1, 64))
	}
	return []Table{outage, hang, recovery, random, rescued, healthy}
}

// BenchThrottler sends b.N bodiless GETs through lib over a bench.Stub.
func BenchThrottler(b *testing.B, lib peers.Library) {
	bench.OverheadCases()[0].Run(b, lib.New(bench.NewStub(), bench.OverheadConfig))
}
