package retryhttp

import (
	"context"
	"net/http"
	"time"

	"github.com/retryhttp/retryhttp/budget"
	"github.com/retryhttp/retryhttp/classify"
	"github.com/retryhttp/retryhttp/hedge"
	"github.com/retryhttp/retryhttp/internal/attempt"
	"github.com/retryhttp/retryhttp/internal/deadlinefmt"
	"github.com/retryhttp/retryhttp/internal/evidence"
	"github.com/retryhttp/retryhttp/internal/latency"
	"github.com/retryhttp/retryhttp/internal/wire"
)

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

// hedgeable reports whether req, whose policy is p, may be hedged.
func hedgeable(req *http.Request, idempotent, hasBody bool, p policy) bool {
	return p.maxAttempts > 1 && !p.noHedge &&
		(idempotent || p.resendable || wire.HasIdempotencyKey(req.Header)) &&
		(!hasBody || req.GetBody != nil)
}

// prepareHedge returns hedge n of req, whose first attempt is a, if the
// time left before the request's deadline, the host's cap and the budget
// allow one: its request, with its own body, attempt number, attempt and
// deadline headers, and what the budget took.
func (t *Transport) prepareHedge(req, a *http.Request, hl *latency.Host, n, maxAttempts int) (*http.Request, budget.Millitokens, bool) {
	left, timely := t.hedgeTime(req, hl)
	if req.Context().Err() != nil || !timely || !hl.MayHedge() {
		return nil, 0, false
	}
	var took budget.Millitokens
	if t.budget != nil {
		var err error
		if took, err = t.budget.Withdraw(req, classify.Verdict{Decision: classify.Retry}); err != nil {
			hl.Unhedge()
			return nil, 0, false
		}
	}
	hctx := attempt.WithNumber(a.Context(), n)
	if left > 0 {
		hctx = deadlinefmt.WithSent(hctx, left)
	}
	h := a.WithContext(hctx)
	if t.attemptHeader != "" {
		h.Header = a.Header.Clone()
		wire.SetField(h.Header, t.attemptHeader, attemptHeaderValue(n, maxAttempts))
	}
	if left > 0 {
		h.Header = t.deadlineHeader(h.Header, t.attemptHeader != "", left)
	}
	if a.Body != nil && a.Body != http.NoBody {
		body, err := req.GetBody()
		if err != nil || body == nil {
			t.unprepareHedge(req, a, h, hl, took)
			return nil, 0, false
		}
		h.Body = body
	}
	return h, took, true
}

// unprepareHedge undoes prepareHedge for a hedge h that will not be sent.
func (t *Transport) unprepareHedge(req, a, h *http.Request, hl *latency.Host, took budget.Millitokens) {
	if h.Body != nil && h.Body != a.Body {
		h.Body.Close()
	}
	hl.Unhedge()
	if t.budget != nil && took > 0 {
		t.budget.Deposit(req, took)
	}
}

// hedgeEnv is a Transport as the hedged call sees it (hedging.Env).
type hedgeEnv Transport

func (e *hedgeEnv) Send(a *http.Request) (*http.Response, error) { return (*Transport)(e).send(a) }

func (e *hedgeEnv) Wins(a *http.Request, resp *http.Response, err error) bool {
	return resp != nil && e.classifier.Classify(a, resp, err).Decision != classify.Retry
}

func (e *hedgeEnv) Prepare(req, a *http.Request, hl *latency.Host, n, maxAttempts int) (*http.Request, budget.Millitokens, bool) {
	return (*Transport)(e).prepareHedge(req, a, hl, n, maxAttempts)
}

func (e *hedgeEnv) Unprepare(req, a, h *http.Request, hl *latency.Host, took budget.Millitokens) {
	(*Transport)(e).unprepareHedge(req, a, h, hl, took)
}

func (e *hedgeEnv) Hedging(req *http.Request, n int, waited time.Duration) {
	t := (*Transport)(e)
	if t.onHedge != nil {
		t.onHedge(HedgeEvent{Request: req, Attempt: n, Delay: waited})
	}
	t.log().Hedge(req, n, waited)
}

func (e *hedgeEnv) Conns() *evidence.Evidence { return e.conns }
