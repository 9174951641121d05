package retryhttp

import (
	"context"
	"net/http"
	"time"

	"github.com/retryhttp/retryhttp/hedge"
	"github.com/retryhttp/retryhttp/internal/config"
	"github.com/retryhttp/retryhttp/internal/wire"

	"github.com/retryhttp/retryhttp/internal/evidence"

	"github.com/retryhttp/retryhttp/internal/latency"
)

// The defaults of hedging, stated in package hedge's docs.
const (
	defaultHedgeQuantile    = 0.95
	defaultHedgeMinDelay    = time.Millisecond
	defaultHedgeMinSamples  = 100
	defaultHedgeMaxFraction = 0.05
	defaultHedgeSamples     = 1000
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
	earning    int64 // the hedge credit a request earns: MaxFraction of latency.HedgeUnit
	table      *latency.Table
}

// WithHedging sends another copy of a request, a hedge, when no attempt has
// had a response within a delay, and returns whichever response comes
// first, so that a request that is merely slow, not failed, does not hold
// its caller up. It is off by default.
//
// The delay is, by default, the 95th percentile of the host's recent time to
// response headers, and a host's hedges are capped at 5% of its requests;
// package hedge explains the delay and the cap, and its options change
// them.
//
// Only a request that may be sent twice is hedged: an idempotent method, an
// idempotency key, or declared resendable; and without a body or with
// GetBody, since the hedge needs its own copy of the body while the first
// may still be sending it. A key-less POST is never hedged. While no
// attempt has answered, another hedge goes out after each further delay,
// up to the attempts allowed: every hedge counts as an attempt
// (WithMaxAttempts, 3 by default; a Transport allowing one attempt never
// hedges). Each hedge is paid from the retry budget, as a retry is; an
// empty budget or a spent cap sends no hedge and never fails the request.
//
// The first response that is a success or final wins; a response that
// would be retried does not win while another attempt is in flight. The
// others are cancelled if still waiting for their response, or drained a
// little and closed, before RoundTrip returns; the base transport must
// honour cancellation. When every attempt fails, the retries go on, if
// attempts remain, as after any failed attempt. NoHedge turns hedging off
// for one call. WithOnHedge sees each hedge. Given more than once, its
// options add up, field by field, a later one overriding an earlier one.
func WithHedging(opts ...hedge.Option) Option {
	for _, o := range opts {
		if o == nil {
			panic("retryhttp: WithHedging: nil hedge.Option")
		}
	}
	return func(t *Transport) {
		t.given |= givenHedging
		t.hedgeOpts = append(t.hedgeOpts, opts...)
	}
}

// newHedging returns the hedging opts configure, applied in order over
// the defaults. Each Transport has its own latencies.
func newHedging(opts []hedge.Option) *hedging {
	c := config.Hedge{
		Quantile:    defaultHedgeQuantile,
		MinDelay:    defaultHedgeMinDelay,
		MinSamples:  defaultHedgeMinSamples,
		MaxFraction: defaultHedgeMaxFraction,
		Samples:     defaultHedgeSamples,
	}
	for _, o := range opts {
		o(&c)
	}
	return &hedging{
		fixed:      c.Delay,
		quantile:   c.Quantile,
		minDelay:   c.MinDelay,
		minSamples: c.MinSamples,
		window:     uint32(c.Samples),
		earning:    latency.HedgeEarning(c.MaxFraction),
		table:      latency.NewTable(defaultHedgeHosts),
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
		(idempotent || p.resendable || wire.HasIdempotencyKey(req.Header)) &&
		(!hasBody || req.GetBody != nil)
}

// delay returns the delay before a hedge to the host of hl, and
// whether there is one yet.
func (h *hedging) delay(hl *latency.Host) (time.Duration, bool) {
	if h.fixed > 0 {
		return h.fixed, true
	}
	d := hl.Delay()
	if d == 0 {
		return 0, false
	}
	return max(d, h.minDelay), true
}

// sendFirstHedged makes the first attempt a of req, hedged when the host's
// delay is known; otherwise it sends a alone, recording its latency. Its
// attempts are traced when traced is set.
func (t *Transport) sendFirstHedged(req, a *http.Request, p policy, traced bool) hedgeResult {
	h := t.hedge
	hl := h.table.Host(wire.RequestKey(req))
	var delay time.Duration
	ok := false
	if hl != nil {
		hl.Count(h.earning)
		delay, ok = h.delay(hl)
	}
	if ok {
		return t.sendHedged(req, a, hl, delay, p, traced)
	}
	var pt *evidence.Trace
	if traced {
		a, pt = evidence.NewTrace(a, nil, nil, t.conns, false)
	}
	start := latency.Monotonic()
	resp, err := t.send(a)
	pt.End()
	if resp != nil && hl != nil {
		hl.Record(start, latency.Monotonic(), h.window, h.quantile, h.minSamples)
	}
	return hedgeResult{resp: resp, a: a, pt: pt, sent: 1, err: err, first: pt}
}
