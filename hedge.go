package retryhttp

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// Hedging defaults, used by WithHedging unless a HedgeOption changes them.
const (
	// DefaultHedgeQuantile is the quantile of a host's recent latency
	// after which a request is hedged (HedgeQuantile).
	DefaultHedgeQuantile = 0.95
	// DefaultHedgeMinDelay is the shortest delay before a hedge
	// (HedgeMinDelay).
	DefaultHedgeMinDelay = time.Millisecond
	// DefaultHedgeMinSamples is how many latencies of a host must be known
	// before its requests are hedged on a quantile (HedgeMinSamples).
	DefaultHedgeMinSamples = 100
	// DefaultHedgeMaxFraction caps a host's hedges at this fraction of its
	// requests (HedgeMaxFraction).
	DefaultHedgeMaxFraction = 0.05
	// DefaultHedgeWindow is how many latencies of a host a window holds
	// (HedgeWindow).
	DefaultHedgeWindow = 1000
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
	earning    int64 // the hedge credit a request earns: HedgeMaxFraction of hedgeUnit
	table      *latencyTable
	timers     sync.Pool // of *hedgeTimer
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
// The default is 0.95: in steady state about one request in twenty passes
// the delay, which the 5% cap (HedgeMaxFraction) allows, so the quantile,
// not the cap, picks which requests are hedged. A higher quantile hedges
// fewer requests, later; a lower one asks for more hedges than the cap
// allows, and the cap then refuses them first come, first refused, slow or
// not.
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

// HedgeMaxFraction caps a host's hedges at a fraction of its requests. It
// must be in (0, 1]. The default is 0.05, so that a server slow for every
// request gets at most 5% more of them rather than twice as many. The cap
// is a token bucket: each request that may be hedged earns its host the
// fraction of a hedge, and a host saves at most 10 hedges, so over any run
// of requests its hedges are at most the fraction of them plus 10.
func HedgeMaxFraction(f float64) HedgeOption {
	if !(f > 0 && f <= 1) {
		panic(fmt.Sprintf("retryhttp: HedgeMaxFraction: fraction must be in (0, 1], got %v", f))
	}
	return func(h *hedging) { h.earning = hedgeEarning(f) }
}

// HedgeWindow sets how many latencies of a host a window holds; the
// quantile covers the last one or two windows, so it follows a change in
// the host's latency within two windows. It must be at least 2. The
// default is 1000.
func HedgeWindow(n int) HedgeOption {
	if n < 2 || n > 1<<30 {
		panic(fmt.Sprintf("retryhttp: HedgeWindow: must be in [2, 2^30], got %d", n))
	}
	return func(h *hedging) { h.window = uint32(n) }
}

// WithHedging sends another copy of a request, a hedge, when no attempt has
// had a response within a delay, and returns whichever response comes
// first, so that a request that is merely slow, not failed, does not hold
// its caller up. It is off by default.
//
// The delay is, by default, the 95th percentile of the host's recent time to
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
// may still be sending it. A key-less POST is never hedged. While no
// attempt has answered, another hedge goes out after each further delay,
// up to the attempts allowed: every hedge counts as an attempt
// (WithMaxAttempts, 3 by default; a Transport allowing one attempt never
// hedges). Each hedge is paid from the retry budget, as a retry is, and a
// host's hedges are capped at 5% of its requests (HedgeMaxFraction); an
// empty budget or a spent cap sends no hedge and never fails the request.
// The hedges a host has saved go to its slowest requests: when fewer than
// half are left, a hedge waits one more delay, so that requests only a
// little late answer first; and when the host has answered nothing for a
// whole delay while three of its requests passed the delay, every request
// is late together, a pause of the client or the server, and no more are
// sent until it answers.
//
// The first response that is a success or final wins; a response that
// would be retried does not win while another attempt is in flight. The
// others are cancelled if still waiting for their response, or drained a
// little and closed, before RoundTrip returns; the base transport must
// honour cancellation. When every attempt fails, the retries go on, if
// attempts remain, as after any failed attempt. NoHedge turns hedging off
// for one call. WithOnHedge sees each hedge.
//
// Latencies and hedge credit are kept for at most 1024 hosts (about 1.7 KiB
// each): a new host takes the place of the host least recently requested,
// which starts afresh, as a new host does, if it is requested again.
func WithHedging(opts ...HedgeOption) Option {
	for _, o := range opts {
		if o == nil {
			panic("retryhttp: WithHedging: nil HedgeOption")
		}
	}
	// Each Transport has its own latencies, even when two share the Option.
	return func(t *Transport) {
		h := &hedging{
			quantile:   DefaultHedgeQuantile,
			minDelay:   DefaultHedgeMinDelay,
			minSamples: DefaultHedgeMinSamples,
			window:     DefaultHedgeWindow,
			earning:    hedgeEarning(DefaultHedgeMaxFraction),
			table:      newLatencyTable(defaultHedgeHosts),
		}
		for _, o := range opts {
			o(h)
		}
		t.hedge = h
	}
}

// NoHedge returns a copy of ctx under which requests are never hedged.
func NoHedge(ctx context.Context) context.Context {
	return withCallOptions(ctx, func(co *callOptions) { co.noHedge = true })
}

// A HedgeEvent describes a hedge about to be sent, for WithOnHedge.
type HedgeEvent struct {
	// Request is the caller's request. Do not modify it.
	Request *http.Request
	// Attempt is the hedge's attempt number: 2 for the first hedge, 3 for
	// the next, and so on.
	Attempt int
	// Delay is how long the first attempt had been waiting.
	Delay time.Duration
}

// WithOnHedge calls fn before each hedge is sent, on a goroutine of the
// Transport's, while the first attempt is in flight. fn must be fast, must
// not block, and must be safe for concurrent use. Each WithOnHedge adds a
// hook. Which attempt won is base.Attempt of the returned response's
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
	h := t.hedge
	hl := h.table.host(requestKey(req))
	if hl == nil {
		resp, err := t.send(a)
		return resp, a, 1, 0, err
	}
	hl.count(h.earning)
	delay, ok := h.delay(hl)
	if !ok {
		start := monotonic()
		resp, err := t.send(a)
		if resp != nil {
			hl.record(start, monotonic(), h.window, h.quantile, h.minSamples)
		}
		return resp, a, 1, 0, err
	}
	return t.sendHedged(req, a, hl, delay, p)
}
