package retryhttp

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/retryhttp/retryhttp/budget"
	"github.com/retryhttp/retryhttp/classify"
	"github.com/retryhttp/retryhttp/internal/attempt"
	"github.com/retryhttp/retryhttp/internal/conns"
	"github.com/retryhttp/retryhttp/internal/deadlinefmt"
	"github.com/retryhttp/retryhttp/internal/deadlines"
	"github.com/retryhttp/retryhttp/internal/evidence"
	"github.com/retryhttp/retryhttp/internal/latency"
	"github.com/retryhttp/retryhttp/internal/layer"
	"github.com/retryhttp/retryhttp/internal/pacing"
	"github.com/retryhttp/retryhttp/internal/wire"
	"github.com/retryhttp/retryhttp/pace"
)

// How a Transport sends an attempt: through its base (by default one of
// its own, package conns), within the per-attempt timeout and the time
// left before the request's deadline (package deadlines), with the
// deadline headers, and, for a request that may be hedged, its hedges
// (package hedging runs them).

// newConns returns the transport of a retry that must not go down the
// connection that failed, a misdirected request's (classify.Verdict's
// Misdirected), made from the base on first use: nil when none can be
// (conns.Fresh).
func (t *Transport) newConns() *http.Transport {
	t.freshOnce.Do(func() { t.fresh = conns.Fresh(t.base) })
	return t.fresh
}

// defaultBase returns the base of a Transport given none (conns.DefaultBase).
func defaultBase() *http.Transport { return conns.DefaultBase() }

// send makes one attempt through the base transport, as exchange does,
// and logs its outcome.
func (t *Transport) send(a *http.Request) (*http.Response, error) {
	var resp *http.Response
	var err error
	if t.answers == nil && t.attemptTimeout <= 0 && t.pacer == nil {
		resp, err = conns.CheckResult(t.base.RoundTrip(a)) // exchange's common case, without its call
	} else {
		resp, err = t.exchange(t.base, a)
	}
	if t.logger != nil {
		t.logAttempt(a, resp, err)
	}
	return resp, err
}

// exchange makes one attempt through rt, the base or a transport made from
// it, applying the per-attempt timeout, and never returns both a response
// and an error. It records the attempt's time to response headers for the
// check before a retry when the request has a deadline and the Transport
// keeps its own table of answer times (answerTable: hedging keeps them
// otherwise).
func (t *Transport) exchange(rt http.RoundTripper, a *http.Request) (resp *http.Response, err error) {
	// A host the pacer does not know has the send of its requests timed
	// only once a response of its says something to the pacer.
	var sent time.Time
	var k pacing.Key
	known := false
	if t.pacer != nil && t.pacer.KnowsAny() {
		if k = t.paceKey(a); t.pacer.Knows(k) {
			known, sent = true, t.now()
		}
	}
	switch {
	case t.answers != nil && hasDeadline(a.Context()):
		resp, err = t.sendTimed(rt, a)
	case t.attemptTimeout <= 0:
		resp, err = conns.CheckResult(rt.RoundTrip(a))
	default:
		resp, err = t.sendWithTimeout(rt, a)
	}
	if t.pacer != nil && resp != nil && (known || pacing.Signals(resp.StatusCode, resp.Header)) {
		now := t.now()
		if !known {
			k, sent = t.paceKey(a), now
		}
		t.logPaceChange(a, t.pacer.Observe(k, sent, now, resp.StatusCode, resp.Header))
	}
	return resp, err
}

// paceKey returns the key req is paced by: its host, and its partition.
func (t *Transport) paceKey(req *http.Request) pacing.Key {
	return pacing.KeyOf(req, t.pace.PartitionHeader, t.paceSeed)
}

// awaitTurn waits, when the request's host is paced, for the turn of its
// attempt n, and reports the wait to the pace hooks. It returns a
// *pace.Error, having waited for nothing more, when the turn is further
// off than pace.MaxWait or the time left before ctx's deadline, and ctx's
// error when ctx is done first: the attempt is not sent then.
func (s *retryState) awaitTurn(ctx context.Context, n int) error {
	t := s.t
	start := t.now()
	limit := t.pace.MaxWait
	if dl, ok := ctx.Deadline(); ok {
		limit = max(min(limit, dl.Sub(start)), 0)
	}
	turn, d, ok := t.pacer.Reserve(t.paceKey(s.req), start, limit)
	waited := time.Duration(0)
	for ok && d > 0 {
		if err := waitTurn(ctx, turn.Nap(), turn.Woken()); err != nil {
			turn.Release(t.now())
			return err
		}
		now := t.now()
		waited = now.Sub(start)
		if d = turn.Wait(now); d > 0 && waited+d > limit {
			turn.Release(now)
			ok = false
		}
	}
	if !ok {
		err := &pace.Error{Host: s.req.URL.Host, Wait: waited + d, Allowed: limit}
		t.paceHooks(PaceEvent{Request: s.req, Attempt: n, Wait: err.Wait, Refused: true})
		return err
	}
	if waited > 0 {
		t.paceHooks(PaceEvent{Request: s.req, Attempt: n, Wait: waited})
	}
	return nil
}

// waitTurn sleeps for d, until woken is closed (the turn may have come
// sooner), or until ctx is done, whichever comes first.
func waitTurn(ctx context.Context, d time.Duration, woken <-chan struct{}) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
	case <-woken:
	}
	return nil
}

// paceHooks calls the pace hooks, if any, with e, and logs it at DEBUG.
func (t *Transport) paceHooks(e PaceEvent) {
	if t.onPace != nil {
		t.onPace(e)
	}
	msg := "retryhttp: paced"
	if e.Refused {
		msg = "retryhttp: not sending"
	}
	t.log().NotSent(e.Request, e.Attempt, msg, string(GiveUpPaced), slog.Duration("wait", e.Wait))
}

// sendWithTimeout is exchange with a per-attempt timeout, without
// recording.
func (t *Transport) sendWithTimeout(rt http.RoundTripper, a *http.Request) (*http.Response, error) {
	return conns.WithTimeout(rt, a, t.attemptTimeout)
}

// timeToSend returns the time left before the deadline of the request whose
// context is ctx, for its next attempt's deadline headers, and whether the
// attempt may be sent (deadlines.TimeToSend). Without deadline headers it
// returns 0 and true.
func (t *Transport) timeToSend(ctx context.Context) (time.Duration, bool) {
	if t.deadlineHeaders == nil {
		return 0, true
	}
	return deadlines.TimeToSend(ctx, t.now())
}

// hasDeadline reports whether ctx has a deadline.
func hasDeadline(ctx context.Context) bool {
	_, ok := ctx.Deadline()
	return ok
}

// deadlineHeader returns h, an attempt's header, with the time left, left,
// in every deadline header (deadlines.Header).
func (t *Transport) deadlineHeader(h http.Header, own bool, left time.Duration) http.Header {
	return deadlines.Header(h, own, t.deadlineHeaders, left)
}

// refuseFirst ends req, whose first attempt is not sent since only left
// remains before its deadline: it closes the request's body, logs and
// reports the give-up, tells a server.Handler serving the request, and
// returns the error.
func (t *Transport) refuseFirst(req *http.Request, left time.Duration) (*http.Response, error) {
	closeBody(req.Body)
	t.log().NotSent(req, 0, "retryhttp: not sending", string(GiveUpDeadline), slog.Duration("time_left", left))
	t.reportGiveUp(req, GiveUpDeadline, ErrNoTimeLeft)
	layer.MarkGaveUp(req.Context())
	return nil, &Error{Err: ErrNoTimeLeft}
}

// waitReason is why a retry whose wait ended in err was given up on.
func waitReason(err error) GiveUpReason {
	var perr *pace.Error
	switch {
	case err == ErrNoTimeLeft:
		return GiveUpDeadline
	case errors.As(err, &perr):
		return GiveUpPaced
	}
	return GiveUpCanceled
}

// answerTable returns the table in which the Transport keeps its hosts'
// answer times for the check: nil when hedging keeps them, in its own
// table, for every request it may hedge; otherwise a table of its own,
// which records the attempts of requests with a deadline only, so that a
// request without one costs no clock reading.
func answerTable(t *Transport) *latency.Table {
	if t.hedge != nil {
		return nil
	}
	return latency.NewTable(deadlines.Hosts)
}

// typicalAnswer returns the median of the recent times to response headers
// of req's host (deadlines.Typical), in hedging's table when it keeps them.
func (t *Transport) typicalAnswer(req *http.Request) time.Duration {
	table := t.answers
	if t.hedge != nil {
		table = t.hedge.Table()
	}
	return deadlines.Typical(table, req)
}

// retryFits reports whether a retry of the failed attempt a, sent at now
// after delay, would have time to finish before the request's deadline
// (deadlines.RetryFits).
func (t *Transport) retryFits(a *http.Request, now time.Time, delay time.Duration) bool {
	if _, ok := a.Context().Deadline(); !ok {
		return true
	}
	return deadlines.RetryFits(a.Context(), now, delay, t.typicalAnswer(a), !t.noFitCheck)
}

// hedgeTime returns the time left for a hedge of req to the host of hl,
// and whether the hedge may be sent (deadlines.HedgeTime).
func (t *Transport) hedgeTime(req *http.Request, hl *latency.Host) (time.Duration, bool) {
	return deadlines.HedgeTime(req.Context(), t.now(), hl, !t.noFitCheck, t.deadlineHeaders != nil)
}

// sendTimed is exchange, recording the attempt's time to response
// headers.
func (t *Transport) sendTimed(rt http.RoundTripper, a *http.Request) (*http.Response, error) {
	start := latency.Monotonic()
	var resp *http.Response
	var err error
	if t.attemptTimeout <= 0 {
		resp, err = conns.CheckResult(rt.RoundTrip(a))
	} else {
		resp, err = t.sendWithTimeout(rt, a)
	}
	t.recordAnswer(a, start, resp)
	return resp, err
}

// recordAnswer records the time to response headers of attempt a, sent at
// start (monotonic), when it has a response.
func (t *Transport) recordAnswer(a *http.Request, start time.Duration, resp *http.Response) {
	if resp != nil {
		deadlines.Record(t.answers, a, start)
	}
}

// deadlineFacts returns, for a request given up on for lack of time, the
// time left before its deadline and its host's typical answer time.
func (t *Transport) deadlineFacts(req *http.Request) (left, typical time.Duration) {
	return t.leftAfter(req, 0), t.typicalAnswer(req)
}

// leftAfter returns the time that will be left before req's deadline once
// delay has passed, 0 when req has no deadline.
func (t *Transport) leftAfter(req *http.Request, delay time.Duration) time.Duration {
	return deadlines.LeftAfter(req.Context(), t.now(), delay)
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
	if t.pacer.Pacing() {
		// A paced host's hedge takes a turn that is free at once, or none.
		if _, _, ok := t.pacer.Reserve(t.paceKey(req), t.now(), 0); !ok {
			hl.Unhedge()
			return nil, 0, false
		}
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
