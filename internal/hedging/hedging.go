// Package hedging sends a hedged request's first round: the first
// attempt, and another copy of it, a hedge, each time no attempt has
// answered within the host's delay, up to the attempts allowed. Given a
// request the loop allows to be sent twice, the hosts' latencies and what
// the Transport lends it (Env: its send, its classifier's verdict, its
// budget, its sender's say on each hedge's deadline and pace, its hooks),
// it decides the delay, whether the host's credit allows a hedge, and
// which attempt wins; the others are cancelled or drained before it
// returns, or left to answer for LoserWait when a cancel would close their
// HTTP/1 connection. It never hedges what the loop did not allow, never
// sends past the attempts allowed, the deadline or the host's pace, never
// sends a hedge the budget did not pay for, and never logs.
package hedging

import (
	"context"
	"net/http"
	"time"

	"github.com/retryhttp/retryhttp/hedge"
	"github.com/retryhttp/retryhttp/internal/config"
	"github.com/retryhttp/retryhttp/internal/evidence"
	"github.com/retryhttp/retryhttp/internal/latency"
	"github.com/retryhttp/retryhttp/internal/wire"
)

// The defaults of hedging, stated in package hedge's docs.
const (
	defaultQuantile    = 0.95
	defaultMinDelay    = time.Millisecond
	DefaultMinSamples  = 100
	defaultMaxFraction = 0.05
	defaultSamples     = 1000
	// Hosts bounds the hosts whose latency is tracked.
	Hosts = 1024
)

// Hedging is how a Transport hedges: the delay's rule and the cap.
type Hedging struct {
	fixed      time.Duration // a fixed delay; 0: the quantile
	quantile   float64
	minDelay   time.Duration
	minSamples int
	window     uint32
	earning    int64 // the hedge credit a request earns: MaxFraction of latency.HedgeUnit
	table      *latency.Table
	config     config.Hedge
}

// New returns the hedging opts configure, applied in order over
// the defaults. Each Transport has its own latencies.
func New(opts []hedge.Option) *Hedging {
	c := config.Hedge{
		Quantile:    defaultQuantile,
		MinDelay:    defaultMinDelay,
		MinSamples:  DefaultMinSamples,
		MaxFraction: defaultMaxFraction,
		Samples:     defaultSamples,
	}
	for _, o := range opts {
		o(&c)
	}
	return &Hedging{
		fixed:      c.Delay,
		quantile:   c.Quantile,
		minDelay:   c.MinDelay,
		minSamples: c.MinSamples,
		window:     uint32(c.Samples),
		earning:    latency.HedgeEarning(c.MaxFraction),
		table:      latency.NewTable(Hosts),
		config:     c,
	}
}

// delay returns the delay before a hedge to the host of hl, and
// whether there is one yet.
func (h *Hedging) delay(hl *latency.Host) (time.Duration, bool) {
	if h.fixed > 0 {
		return h.fixed, true
	}
	d := hl.Delay()
	if d == 0 {
		return 0, false
	}
	return max(d, h.minDelay), true
}

// Config returns the settings the options made, defaults included.
func (h *Hedging) Config() config.Hedge { return h.config }

// Earning returns the hedge credit a request earns its host, in
// latency.HedgeUnit.
func (h *Hedging) Earning() int64 { return h.earning }

// Table returns the hosts' latencies: the deadlines' typical answer
// times, when hedging keeps them.
func (h *Hedging) Table() *latency.Table { return h.table }

// SendFirst makes the first attempt a of req, hedged when the host's
// delay is known; otherwise it sends a alone, recording its latency. Its
// attempts are traced when traced is set.
func (h *Hedging) SendFirst(env Env, req, a *http.Request, maxAttempts int, traced bool) Result {
	hl := h.table.Host(wire.RequestKey(req))
	var delay time.Duration
	ok := false
	if hl != nil {
		hl.Count(h.earning)
		delay, ok = h.delay(hl)
	}
	if ok {
		return h.sendHedged(env, req, a, hl, delay, maxAttempts, traced)
	}
	var pt *evidence.Trace
	if traced {
		a, pt = evidence.NewTrace(a, nil, nil, env.Conns(), false)
	}
	start := latency.Monotonic()
	resp, err := env.Send(a)
	pt.End()
	if resp != nil && hl != nil {
		hl.Record(start, latency.Monotonic(), h.window, h.quantile, h.minSamples)
	}
	return Result{Resp: resp, A: a, PT: pt, Sent: 1, Err: err, First: pt}
}

// sentKey is the context key under which a hedged request's winner carries
// how many attempts were sent, when the winner is not the last of them.
type sentKey struct{}

// Sent returns how many attempts were sent of the request whose attempt's
// context is ctx, when WithSent recorded it.
func Sent(ctx context.Context) (int, bool) {
	n, ok := ctx.Value(sentKey{}).(int)
	return n, ok
}
