package retryhttp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"time"

	"github.com/retryhttp/retryhttp/internal/attempt"
	"github.com/retryhttp/retryhttp/internal/throttling"
	"github.com/retryhttp/retryhttp/resume"
)

// The Transport logs by slog's levels (WithLogger). INFO is for what an
// operator acts on, at most one line a call: a call given up on for a
// reason listed by operatorGiveUp, a response body that could not be made
// whole (a *resume.Error), and adaptive throttling that starts or ends for
// a host. DEBUG is for each attempt and each decision. A call whose
// outcome changes its host's throttling logs that change at INFO, and its
// own give-up at DEBUG.

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

// logAttempt logs the outcome of the attempt a at DEBUG.
func (t *Transport) logAttempt(a *http.Request, resp *http.Response, err error) {
	ctx := a.Context()
	if !t.logger.Enabled(ctx, slog.LevelDebug) {
		return
	}
	t.logger.LogAttrs(ctx, slog.LevelDebug, "retryhttp: attempt",
		attemptAttrs(a, attempt.Number(ctx), statusOf(resp), err, attempt.Peer(ctx))...)
}

// logRetry logs e, a retry or a resume about to be made, or a send the
// base made again on its own, at DEBUG.
func (t *Transport) logRetry(e RetryEvent) {
	ctx := e.Request.Context()
	if t.logger == nil || !t.logger.Enabled(ctx, slog.LevelDebug) {
		return
	}
	if e.BaseResend {
		t.logger.LogAttrs(ctx, slog.LevelDebug, "retryhttp: resent by the base", attemptAttrs(e.Request, e.Attempt, 0, nil, e.Peer)...)
		return
	}
	msg := "retryhttp: retrying"
	attrs := appendTimeLeft(append(attemptAttrs(e.Request, e.Attempt, e.StatusCode, e.Err, e.Peer), slog.Duration("delay", e.Delay)), e.TimeLeft)
	if e.Resume {
		msg = "retryhttp: resuming response body"
		attrs = append(attrs, slog.Int64("offset", e.Offset))
	}
	t.logger.LogAttrs(ctx, slog.LevelDebug, msg, attrs...)
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
	ctx := req.Context()
	if t.logger == nil || !t.logger.Enabled(ctx, level) {
		return info
	}
	attrs := t.appendDeadlineFacts(append(attemptAttrs(req, e.Attempt, e.StatusCode, e.Err, e.Peer), slog.String("reason", string(e.Reason))), req, e.Reason, delay)
	if e.Resume {
		attrs = append(attrs, slog.Int64("offset", e.Offset))
	}
	t.logger.LogAttrs(ctx, level, "retryhttp: not retrying", attrs...)
	return info
}

// logBodyFailure logs e, the error that ends the response body of req's
// call after the attempt-th attempt, at INFO unless the call has logged at
// INFO already (info) or its caller gave up, and otherwise at DEBUG.
func (t *Transport) logBodyFailure(req *http.Request, attempt int, e *resume.Error, info bool) {
	ctx := req.Context()
	level := slog.LevelInfo
	if info || ctx.Err() != nil {
		level = slog.LevelDebug
	}
	if t.logger == nil || !t.logger.Enabled(ctx, level) {
		return
	}
	attrs := append(attemptAttrs(req, attempt, e.StatusCode, e.Err, netip.AddrPort{}),
		slog.String("reason", string(e.Reason)), slog.Int64("offset", e.Offset), slog.Int("resumes", e.Resumes))
	t.logger.LogAttrs(ctx, level, "retryhttp: response body failed", attrs...)
}

// logThrottleChange logs at INFO that adaptive throttling started (with
// its rejection probability) or ended for a host, as c, which the call
// whose context is ctx found, tells. It reports whether there was a change
// to log.
func (t *Transport) logThrottleChange(ctx context.Context, c throttling.Change) bool {
	if c.Kind == throttling.Same {
		return false
	}
	if t.logger == nil || !t.logger.Enabled(ctx, slog.LevelInfo) {
		return true
	}
	k := c.Host()
	host := []slog.Attr{slog.String("scheme", k.Scheme), slog.String("host", k.Host)}
	if c.Kind == throttling.Started {
		t.logger.LogAttrs(ctx, slog.LevelInfo, "retryhttp: throttling started", append(host, slog.Float64("rejection_probability", c.Probability))...)
	} else {
		t.logger.LogAttrs(ctx, slog.LevelInfo, "retryhttp: throttling ended", host...)
	}
	return true
}

// logStorePanic logs at WARN r, the first panic of the throttle.Store that
// adaptive throttling shares its counts through: the exchange failed, and
// the Transport throttles on its own counts until one succeeds.
func (t *Transport) logStorePanic(r any) {
	if t.logger == nil {
		return
	}
	t.logger.LogAttrs(context.Background(), slog.LevelWarn, "retryhttp: throttle store panicked; throttling on local counts",
		slog.String("panic", fmt.Sprint(r)))
}

// logRefusal logs req, refused by adaptive throttling with probability p,
// at DEBUG.
func (t *Transport) logRefusal(req *http.Request, p float64) {
	ctx := req.Context()
	if t.logger == nil || !t.logger.Enabled(ctx, slog.LevelDebug) {
		return
	}
	t.logger.LogAttrs(ctx, slog.LevelDebug, "retryhttp: throttled",
		append(requestAttrs(req, 0),
			slog.String("reason", string(GiveUpThrottled)),
			slog.Float64("rejection_probability", p))...)
}

// logNoTimeLeft logs at DEBUG an attempt that is not sent for lack of
// time.
func (t *Transport) logNoTimeLeft(req *http.Request, attempt int, left time.Duration) {
	ctx := req.Context()
	if t.logger == nil || !t.logger.Enabled(ctx, slog.LevelDebug) {
		return
	}
	t.logger.LogAttrs(ctx, slog.LevelDebug, "retryhttp: not sending",
		append(requestAttrs(req, attempt),
			slog.String("reason", string(GiveUpDeadline)), slog.Duration("time_left", left))...)
}

// logHedge logs at DEBUG hedge n of req, sent after waited.
func (t *Transport) logHedge(req *http.Request, n int, waited time.Duration) {
	ctx := req.Context()
	if t.logger == nil || !t.logger.Enabled(ctx, slog.LevelDebug) {
		return
	}
	t.logger.LogAttrs(ctx, slog.LevelDebug, "retryhttp: hedging",
		append(requestAttrs(req, n), slog.Duration("waited", waited))...)
}

// requestAttrs is attemptAttrs for an attempt of req that has no outcome
// yet, or will not be sent.
func requestAttrs(req *http.Request, attempt int) []slog.Attr {
	return attemptAttrs(req, attempt, 0, nil, netip.AddrPort{})
}

// attemptAttrs describes an attempt for the log without headers, user
// information or query strings, which may hold secrets, with its status
// when it has one (not 0), its error, and the connection's remote address
// when it is known.
func attemptAttrs(req *http.Request, attempt, status int, err error, peer netip.AddrPort) []slog.Attr {
	u := url.URL{Scheme: req.URL.Scheme, Host: req.URL.Host, Path: req.URL.Path}
	if u.Host == "" {
		u.Host = req.Host
	}
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	attrs := []slog.Attr{
		slog.String("method", method),
		slog.String("url", u.String()),
		slog.Int("attempt", attempt),
	}
	if status != 0 {
		attrs = append(attrs, slog.Int("status", status))
	}
	if peer.IsValid() {
		attrs = append(attrs, slog.String("network.peer.address", peer.Addr().String()), slog.Int("network.peer.port", int(peer.Port())))
	}
	if err != nil {
		// A *url.Error's message repeats the URL, query string included.
		var uerr *url.Error
		for errors.As(err, &uerr) {
			err = uerr.Err
		}
		attrs = append(attrs, slog.String("error", err.Error()))
	}
	return attrs
}
