package retryhttp

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"
)

// Hedging defaults; see WithHedging.
const (
	DefaultHedgeQuantile    = 0.97
	DefaultHedgeMinDelay    = time.Millisecond
	DefaultHedgeMinSamples  = 100
	DefaultHedgeMaxFraction = 0.05
	DefaultHedgeWindow      = 1000
	// defaultHedgeHosts bounds the hosts whose latency is tracked.
	defaultHedgeHosts = 1024
)

// hedging is how a Transport hedges: the delay's rule and the cap.
type hedging struct {
	fixed      time.Duration // a fixed delay; 0: the quantile
	quantile   float64
	minDelay   time.Duration
	minSamples int
	window     uint32
	fraction   float64
	table      *latencyTable
}

// A HedgeOption configures hedging; see WithHedging.
type HedgeOption func(*hedging)

// HedgeDelay hedges after a fixed delay instead of a quantile of the host's
// latency. It must be positive. A fixed delay shorter than a host's usual
// latency hedges most requests, up to the cap; prefer the quantile.
func HedgeDelay(d time.Duration) HedgeOption {
	if d <= 0 {
		panic("retryhttp: HedgeDelay: delay must be positive, got " + d.String())
	}
	return func(h *hedging) { h.fixed = d }
}

// HedgeQuantile sets the quantile of the host's recent latency (time to
// response headers) after which a request is hedged. It must be in (0, 1).
// The default is 0.97: about three requests in a hundred are slow enough to
// hedge, which leaves room under the 5% cap (HedgeMaxFraction) for the
// tail's slow requests to all be hedged. At 0.95, about as many requests
// pass the delay as the cap allows, and the cap, not the tail, picks which
// are hedged.
func HedgeQuantile(q float64) HedgeOption {
	if !(q > 0 && q < 1) {
		panic(fmt.Sprintf("retryhttp: HedgeQuantile: quantile must be in (0, 1), got %v", q))
	}
	return func(h *hedging) { h.quantile = q }
}

// HedgeMinDelay sets the shortest delay before a hedge, whatever the
// quantile says. It must not be negative. The default is 1 ms.
func HedgeMinDelay(d time.Duration) HedgeOption {
	if d < 0 {
		panic("retryhttp: HedgeMinDelay: negative delay " + d.String())
	}
	return func(h *hedging) { h.minDelay = d }
}

// HedgeMinSamples sets how many latencies of a host must be known before
// its requests are hedged on a quantile. It must be at least 1. The default
// is 100: a 95th percentile of fewer is noise.
func HedgeMinSamples(n int) HedgeOption {
	if n < 1 {
		panic(fmt.Sprintf("retryhttp: HedgeMinSamples: must be at least 1, got %d", n))
	}
	return func(h *hedging) { h.minSamples = n }
}

// HedgeMaxFraction caps a host's hedges at a fraction of its requests over
// the last one or two windows. It must be in (0, 1]. The default is 0.05,
// so that a server slow for every request gets at most 5% more of them
// rather than twice as many.
func HedgeMaxFraction(f float64) HedgeOption {
	if !(f > 0 && f <= 1) {
		panic(fmt.Sprintf("retryhttp: HedgeMaxFraction: fraction must be in (0, 1], got %v", f))
	}
	return func(h *hedging) { h.fraction = f }
}

// HedgeWindow sets how many requests of a host a window of latencies and
// hedges holds; the quantile and the cap cover the last one or two windows.
// It must be at least 2. The default is 1000.
func HedgeWindow(n int) HedgeOption {
	if n < 2 || n > 1<<30 {
		panic(fmt.Sprintf("retryhttp: HedgeWindow: must be in [2, 2^30], got %d", n))
	}
	return func(h *hedging) { h.window = uint32(n) }
}

// WithHedging sends a second copy of a request, a hedge, when the first has
// had no response within a delay, and returns whichever response comes
// first, so that a request that is merely slow, not failed, does not hold
// its caller up. It is off by default.
//
// The delay is, by default, the 97th percentile of the host's recent time to
// response headers (at least 1 ms, and only once 100 latencies are known):
// a quantile follows the host, so that only the slowest few requests are
// hedged whether the host answers in 1 ms or 1 s, where a fixed delay
// shorter than the usual latency hedges nearly every request, and one longer
// than the tail hedges none. When a host turns slow for every request its
// quantile rises with it, and hedges stop.
//
// Only a request that may be sent twice is hedged: an idempotent method, an
// idempotency key, or declared resendable; and without a body or with
// GetBody, since the hedge needs its own copy of the body while the first
// may still be sending it. A key-less POST is never hedged. At most one
// hedge is sent per request, on its first attempt, and it counts as an
// attempt (WithMaxAttempts; a Transport allowing one attempt never hedges).
// Each hedge is paid from the retry budget, as a retry is, and a host's
// hedges are capped at 5% of its requests (HedgeMaxFraction); an empty
// budget or a spent cap sends no hedge and never fails the request.
//
// The first response that is a success or final wins; a response that
// would be retried does not win while the other attempt is in flight. The
// loser is cancelled, its response drained a little and closed, before
// RoundTrip returns; the base transport must honour cancellation. When both
// fail, the retries go on as after any failed attempt. NoHedge turns
// hedging off for one call. WithOnHedge sees each hedge.
func WithHedging(opts ...HedgeOption) Option {
	h := &hedging{
		quantile:   DefaultHedgeQuantile,
		minDelay:   DefaultHedgeMinDelay,
		minSamples: DefaultHedgeMinSamples,
		window:     DefaultHedgeWindow,
		fraction:   DefaultHedgeMaxFraction,
	}
	for _, o := range opts {
		if o == nil {
			panic("retryhttp: WithHedging: nil HedgeOption")
		}
		o(h)
	}
	h.table = newLatencyTable(defaultHedgeHosts)
	return func(t *Transport) { t.hedge = h }
}

// NoHedge returns a copy of ctx under which requests are never hedged.
func NoHedge(ctx context.Context) context.Context {
	return withCallOptions(ctx, func(co *callOptions) { co.noHedge = true })
}

// A HedgeEvent describes a hedge about to be sent, for WithOnHedge.
type HedgeEvent struct {
	// Request is the caller's request. Do not modify it.
	Request *http.Request
	// Attempt is the hedge's attempt number: 2.
	Attempt int
	// Delay is how long the first attempt had been waiting.
	Delay time.Duration
}

// WithOnHedge calls fn before each hedge is sent, on a goroutine of the
// Transport's, while the first attempt is in flight. fn must be fast, must
// not block, and must be safe for concurrent use. Each WithOnHedge adds a
// hook. Which attempt won is AttemptFromContext of the returned response's
// Request's context; Attempts counts both.
func WithOnHedge(fn func(HedgeEvent)) Option {
	if fn == nil {
		panic("retryhttp: WithOnHedge: nil function")
	}
	return func(t *Transport) { t.onHedge = both(t.onHedge, fn) }
}

// sentKey is the context key under which a hedged request's winner carries
// how many attempts were sent, when the winner is not the last of them.
type sentKey struct{}

// hedgeable reports whether req, whose policy is p, may be hedged.
func hedgeable(req *http.Request, idempotent, hasBody bool, p policy) bool {
	return p.maxAttempts > 1 && !p.noHedge &&
		(idempotent || p.resendable || hasIdempotencyKey(req.Header)) &&
		(!hasBody || req.GetBody != nil)
}

// delay returns the delay before a hedge to the host of hl, and
// whether there is one yet.
func (h *hedging) delay(hl *hostLatency) (time.Duration, bool) {
	if h.fixed > 0 {
		return h.fixed, true
	}
	d := time.Duration(hl.delay.Load())
	if d == 0 {
		return 0, false
	}
	return max(d, h.minDelay), true
}

// sendFirstHedged makes the first attempt a of req, hedged when the host's
// delay is known; otherwise it sends a alone, recording its latency. It
// returns the outcome, its attempt request, the attempts sent and what the
// budget took for a hedge that won.
func (t *Transport) sendFirstHedged(req, a *http.Request, p policy) (*http.Response, *http.Request, int, Tokens, error) {
	hl := t.hedge.table.host(requestKey(req))
	if hl == nil {
		resp, err := t.send(a)
		return resp, a, 1, 0, err
	}
	hl.count()
	delay, ok := t.hedge.delay(hl)
	if !ok {
		start := time.Now()
		resp, err := t.send(a)
		if resp != nil {
			hl.record(time.Since(start), t.hedge.window, t.hedge.quantile, t.hedge.minSamples)
		}
		return resp, a, 1, 0, err
	}
	return t.sendHedged(req, a, hl, delay, p)
}

// hedgeResult is the outcome of one attempt of a hedged request.
type hedgeResult struct {
	resp *http.Response
	err  error
	a    *http.Request
}

// A hedgeRun is one request's first attempt and, if it fires, its hedge.
// The first attempt runs on the caller's goroutine; a timer starts the
// hedge on a goroutine of its own, so that a request answered before the
// delay needs neither.
type hedgeRun struct {
	t      *Transport
	req    *http.Request      // the caller's
	orig   *http.Request      // the first attempt as the loop made it
	a      *http.Request      // the first attempt, with a context of its own
	cancel context.CancelFunc // ends the first attempt
	hl     *hostLatency
	p      policy
	start  time.Time

	mu          sync.Mutex
	primaryDone bool // the first attempt has returned: no hedge may start
	launched    bool // a hedge was sent; final once primaryDone is set
	spent       Tokens
	hedge       chan hedgeResult // the hedge's outcome, once launched
	cancelHedge context.CancelFunc
}

// sendHedged makes the first attempt a of req and, if it has no outcome
// within delay and the budget and the host's cap allow, a hedge. It returns
// the winning outcome, its attempt request, how many attempts were sent,
// and what the budget took for a hedge that won.
func (t *Transport) sendHedged(req, a *http.Request, hl *hostLatency, delay time.Duration, p policy) (*http.Response, *http.Request, int, Tokens, error) {
	r := &hedgeRun{t: t, req: req, orig: a, hl: hl, p: p, start: time.Now()}
	ctx, cancel := context.WithCancel(a.Context())
	r.a, r.cancel = a.WithContext(ctx), cancel
	timer := time.AfterFunc(delay, r.fire)
	resp, err := t.send(r.a)
	timer.Stop()
	if resp != nil {
		hl.record(time.Since(r.start), t.hedge.window, t.hedge.quantile, t.hedge.minSamples)
	}
	r.mu.Lock()
	r.primaryDone = true
	launched := r.launched
	r.mu.Unlock()
	if !launched {
		return keep(resp, err, r.a, cancel), r.a, 1, 0, err
	}

	// A hedge is out. The first attempt wins if it is final or a success,
	// unless the hedge won first and cancelled it; a failure to retry
	// waits for the hedge.
	cancelledByHedge := err != nil && ctx.Err() != nil && a.Context().Err() == nil
	if !cancelledByHedge && t.classifier.Classify(r.a, resp, err).Decision != Retry {
		r.cancelHedge()
		if h := <-r.hedge; h.resp != nil {
			discard(h.resp)
		}
		resp = keep(resp, err, r.a, cancel)
		if resp != nil {
			// Attempts reports both attempts, not the winner's number.
			resp.Request = r.a.WithContext(context.WithValue(ctx, sentKey{}, 2))
		}
		return resp, r.a, 2, 0, err
	}
	h := <-r.hedge
	if resp != nil {
		discard(resp)
	}
	cancel()
	return keep(h.resp, h.err, h.a, r.cancelHedge), h.a, 2, r.spent, h.err
}

// keep returns resp with its body set to release the attempt's context
// when closed, or, when there is no response, releases it at once.
func keep(resp *http.Response, _ error, _ *http.Request, cancel context.CancelFunc) *http.Response {
	if resp == nil {
		cancel()
		return nil
	}
	resp.Body = newCancelBody(resp.Body, cancel)
	return resp
}

// fire starts the hedge, unless the first attempt has returned or the
// host's cap or the budget refuse it. When the hedge wins, it cancels the
// first attempt, so that the caller's goroutine returns.
func (r *hedgeRun) fire() {
	r.mu.Lock()
	done := r.primaryDone
	r.mu.Unlock()
	if done {
		return
	}
	h, took, ok := r.t.startHedge(r.req, r.orig, r.hl, time.Since(r.start), r.p)
	if !ok {
		return
	}
	ctx, cancel := context.WithCancel(h.Context())
	h = h.WithContext(ctx)
	r.mu.Lock()
	if r.primaryDone {
		r.mu.Unlock()
		cancel()
		if r.t.budget != nil && took > 0 {
			r.t.budget.Deposit(r.req, took) // never sent
		}
		return
	}
	r.launched, r.spent, r.cancelHedge = true, took, cancel
	r.hedge = make(chan hedgeResult, 1)
	r.mu.Unlock()
	go func() {
		resp, err := r.t.send(h)
		if r.t.classifier.Classify(h, resp, err).Decision != Retry {
			r.cancel() // the hedge won: the first attempt ends
		}
		r.hedge <- hedgeResult{resp: resp, err: err, a: h}
	}()
}

// startHedge returns the hedge of req, whose first attempt is a, if the
// host's cap and the budget allow one: its request, with its own body and
// attempt number, and what the budget took.
func (t *Transport) startHedge(req, a *http.Request, hl *hostLatency, waited time.Duration, p policy) (*http.Request, Tokens, bool) {
	if req.Context().Err() != nil || !hl.mayHedge(t.hedge.fraction) {
		return nil, 0, false
	}
	var took Tokens
	if t.budget != nil {
		var err error
		if took, err = t.budget.Withdraw(req, Verdict{Decision: Retry}); err != nil {
			return nil, 0, false
		}
	}
	h := a.WithContext(context.WithValue(a.Context(), attemptKey{}, 2))
	if t.attemptHeader != "" {
		h.Header = a.Header.Clone()
		h.Header.Set(t.attemptHeader, attemptHeaderValue(2, p.maxAttempts))
	}
	if a.Body != nil && a.Body != http.NoBody {
		body, err := req.GetBody()
		if err != nil || body == nil {
			if t.budget != nil && took > 0 {
				t.budget.Deposit(req, took)
			}
			return nil, 0, false
		}
		h.Body = body
	}
	if t.onHedge != nil {
		t.onHedge(HedgeEvent{Request: req, Attempt: 2, Delay: waited})
	}
	if t.logger != nil && t.logger.Enabled(req.Context(), slog.LevelDebug) {
		t.logger.LogAttrs(req.Context(), slog.LevelDebug, "retryhttp: hedging",
			append(requestAttrs(req, 1, nil, nil), slog.Duration("waited", waited))...)
	}
	return h, took, true
}
