package retryhttp

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/retryhttp/retryhttp/budget"
	"github.com/retryhttp/retryhttp/classify"
	"github.com/retryhttp/retryhttp/internal/conns"
	"github.com/retryhttp/retryhttp/internal/evidence"
	"github.com/retryhttp/retryhttp/internal/layer"
	"github.com/retryhttp/retryhttp/internal/sender"
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

// send makes one attempt through the base transport (sender.Exchange,
// or the base itself when the sender has nothing to add), and logs its
// outcome.
func (t *Transport) send(a *http.Request) (*http.Response, error) {
	var resp *http.Response
	var err error
	if t.snd.Direct(a) {
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
	t.log().NotSent(req, 0, "retryhttp: not sending", string(GiveUpDeadline), slog.Duration("time_left", max(left, 0)))
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

// hedgeEnv is a Transport as the hedged call sees it (hedging.Env).
type hedgeEnv Transport

func (e *hedgeEnv) Send(a *http.Request) (*http.Response, error) { return (*Transport)(e).send(a) }

func (e *hedgeEnv) Wins(a *http.Request, resp *http.Response, err error) bool {
	return resp != nil && e.classifier.Classify(a, resp, err).Decision != classify.Retry
}

func (e *hedgeEnv) Sender() *sender.Sender { return &e.snd }

func (e *hedgeEnv) Budget() budget.Budget { return e.budget }

func (e *hedgeEnv) AttemptHeader() string { return e.attemptHeader }

func (e *hedgeEnv) Hedging(req *http.Request, n int, waited time.Duration) {
	t := (*Transport)(e)
	if t.onHedge != nil {
		t.onHedge(HedgeEvent{Request: req, Attempt: n, Delay: waited})
	}
	t.log().Hedge(req, n, waited)
}

func (e *hedgeEnv) Conns() *evidence.Evidence { return e.conns }
