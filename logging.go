package retryhttp

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/retryhttp/retryhttp/internal/attempt"
	"github.com/retryhttp/retryhttp/internal/logline"
	"github.com/retryhttp/retryhttp/internal/throttling"
	"github.com/retryhttp/retryhttp/resume"
)

// The Transport logs by slog's levels (WithLogger). INFO is for what an
// operator acts on, at most one line a call: a call given up on for a
// reason listed by operatorGiveUp, a response body that could not be made
// whole (a *resume.Error), and adaptive throttling that starts or ends for
// a host. DEBUG is for each attempt and each decision. A call whose
// outcome changes its host's throttling logs that change at INFO, and its
// own give-up at DEBUG. Package logline writes the lines.

// operatorGiveUp reports whether e ends a call in a way an operator acts
// on, logged at INFO: its retries or resumes ran out (attempts after a
// retry, the budget, the deadline, the resume limit), the server asked for
// a wait beyond the limit, a request body could not be replayed (larger
// than WithBodyBufferLimit without GetBody, or GetBody failed: the retry
// configured cannot happen), or a response body could not be resumed. The
// caller's cancellation, a refusal by adaptive throttling (its start and
// end are logged instead), and a request that could never have been
// resent (not idempotent, or one attempt allowed) are not.
func operatorGiveUp(e GiveUpEvent) bool {
	switch e.Reason {
	case GiveUpCanceled, GiveUpThrottled, GiveUpNotResendable:
		return false
	case GiveUpAttemptsExhausted:
		return e.Attempt > 1 // one attempt allowed: nothing was retried
	}
	return true
}

// log returns the Transport's log.
func (t *Transport) log() logline.Log { return logline.Log{L: t.logger} }

// logAttempt logs the outcome of the attempt a at DEBUG.
func (t *Transport) logAttempt(a *http.Request, resp *http.Response, err error) {
	ctx := a.Context()
	t.log().Attempt(logline.Attempt{Req: a, N: attempt.Number(ctx), Status: statusOf(resp), Err: err, Peer: attempt.Peer(ctx)})
}

// logRetry logs e, a retry or a resume about to be made, or a send the
// base made again on its own, at DEBUG.
func (t *Transport) logRetry(e RetryEvent) {
	a := logline.Attempt{Req: e.Request, N: e.Attempt, Peer: e.Peer}
	if e.BaseResend {
		t.log().BaseResend(a)
		return
	}
	a.Status, a.Err = e.StatusCode, e.Err
	t.log().Retry(a, e.Delay, e.TimeLeft, e.Resume, e.Offset)
}

// logGiveUp logs e, a retryable failure of the attempt req that is not
// retried, and why; delay is the wait the retry would have had, which a
// give-up for lack of time reports. It logs at INFO when the reason is an
// operator's concern and the call has not logged at INFO yet (info), and
// otherwise at DEBUG. It reports whether the call has now logged at INFO.
func (t *Transport) logGiveUp(req *http.Request, e GiveUpEvent, delay time.Duration, info bool) bool {
	level := slog.LevelDebug
	if !info && operatorGiveUp(e) {
		level, info = slog.LevelInfo, true
	}
	l := t.log()
	if !l.Enabled(req.Context(), level) {
		return info
	}
	var late *logline.Late
	if e.Reason == GiveUpDeadline {
		late = &logline.Late{Delay: delay, Left: t.leftAfter(req, delay), Typical: t.typicalAnswer(req)}
	}
	a := logline.Attempt{Req: req, N: e.Attempt, Status: e.StatusCode, Err: e.Err, Peer: e.Peer}
	l.GiveUp(level, a, string(e.Reason), late, e.Resume, e.Offset)
	return info
}

// logBodyFailure logs e, the error that ends the response body of req's
// call after the attempt-th attempt, at INFO unless the call has logged at
// INFO already (info) or its caller gave up, and otherwise at DEBUG.
func (t *Transport) logBodyFailure(req *http.Request, n int, e *resume.Error, info bool) {
	level := slog.LevelInfo
	if info || req.Context().Err() != nil {
		level = slog.LevelDebug
	}
	a := logline.Attempt{Req: req, N: n, Status: e.StatusCode, Err: e.Err}
	t.log().BodyFailure(level, a, string(e.Reason), e.Offset, e.Resumes)
}

// logThrottleChange logs at INFO that adaptive throttling started (with
// its rejection probability) or ended for a host, as c, which the call
// whose context is ctx found. It reports whether there was a change to
// log.
func (t *Transport) logThrottleChange(ctx context.Context, c throttling.Change) bool {
	if c.Kind == throttling.Same {
		return false
	}
	k := c.Host()
	if c.Kind == throttling.Started {
		t.log().Host(ctx, "retryhttp: throttling started", k.Scheme, k.Host, slog.Float64("rejection_probability", c.Probability))
	} else {
		t.log().Host(ctx, "retryhttp: throttling ended", k.Scheme, k.Host)
	}
	return true
}
