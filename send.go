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
	"github.com/retryhttp/retryhttp/internal/evidence"
	"github.com/retryhttp/retryhttp/internal/latency"
	"github.com/retryhttp/retryhttp/internal/layer"
	"github.com/retryhttp/retryhttp/internal/wire"
	"github.com/retryhttp/retryhttp/pace"
)

// How a Transport sends an attempt: through its base (by default one of
// its own, package conns) by package sender, which bounds it by the
// per-attempt timeout, the request's deadline and its host's pace; and,
// for a request that may be hedged, its hedges (package hedging runs
// them).

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

// send makes one attempt through the base transport (sender.Send), and
// logs its outcome.
func (t *Transport) send(a *http.Request) (*http.Response, error) {
	var resp *http.Response
	var err error
	if t.snd.Plain() {
		resp, err = conns.CheckResult(t.base.RoundTrip(a)) // Send's common case, without its call
	} else {
		resp, err = t.snd.Exchange(t.base, a)
	}
	if t.logger != nil {
		t.logAttempt(a, resp, err)
	}
	return resp, err
}

// awaitTurn waits, when the request's host is paced, for the turn of its
// attempt n (sender.AwaitTurn), and reports the wait to the pace hooks and
// the log. It returns a *pace.Error when the turn is further off than
// allowed, and ctx's error when ctx is done first: the attempt is not sent
// then.
func (s *retryState) awaitTurn(ctx context.Context, n int) error {
	t := s.t
	waited, err := t.snd.AwaitTurn(ctx, s.req)
	var perr *pace.Error
	switch {
	case errors.As(err, &perr):
		t.paceHooks(PaceEvent{Request: s.req, Attempt: n, Wait: perr.Wait, Refused: true})
	case err == nil && waited > 0:
		t.paceHooks(PaceEvent{Request: s.req, Attempt: n, Wait: waited})
	}
	return err
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
	left, timely := t.snd.HedgeTime(req, hl)
	if req.Context().Err() != nil || !timely || !hl.MayHedge() {
		return nil, 0, false
	}
	if !t.snd.FreeTurn(req) {
		// A paced host's hedge takes a turn that is free at once, or none.
		hl.Unhedge()
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
		h.Header = t.snd.Header(h.Header, t.attemptHeader != "", left)
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
