package retryhttp

import (
	"context"
	"log/slog"
	"net/http"
	"net/netip"
	"time"

	"github.com/retryhttp/retryhttp/classify"
	"github.com/retryhttp/retryhttp/internal/attempt"
	"github.com/retryhttp/retryhttp/internal/conns"
	"github.com/retryhttp/retryhttp/internal/evidence"
	"github.com/retryhttp/retryhttp/internal/giveup"
	"github.com/retryhttp/retryhttp/internal/guard"
	"github.com/retryhttp/retryhttp/internal/layer"
	"github.com/retryhttp/retryhttp/internal/logline"
	"github.com/retryhttp/retryhttp/internal/pacing"
	"github.com/retryhttp/retryhttp/internal/throttling"
	"github.com/retryhttp/retryhttp/resume"
)

// A GiveUpReason says why a Transport stopped retrying a request whose last
// attempt failed in a way worth retrying. Its value is a short phrase, the
// one the Transport's log messages give as the reason. A failure that the
// classifier does not retry (a 404, a TLS error, a caller who gave up while
// an attempt was in flight) is final, not given up on, and has no reason.
//
// The type is declared in an internal package, so that resume.Error can hold
// one without package resume importing this one; GiveUpReason is its name.
type GiveUpReason = giveup.Reason

// The reasons for giving up, each with the option that governs it.
const (
	// GiveUpAttemptsExhausted: the last attempt allowed (WithMaxAttempts)
	// failed.
	GiveUpAttemptsExhausted GiveUpReason = "attempts exhausted"
	// GiveUpBudgetExhausted: the Budget refused the retry (WithBudget).
	GiveUpBudgetExhausted GiveUpReason = "retry budget exhausted"
	// GiveUpNotResendable: the request's method is not idempotent, it
	// carries no idempotency key, and nothing proves that the failed
	// attempt never reached the server (WithIdempotencyKeys).
	GiveUpNotResendable GiveUpReason = "request is not idempotent"
	// GiveUpBodyNotReplayable: the request body cannot be sent again: it has
	// no GetBody and the first attempt did not send it whole within the
	// buffer limit (WithBodyBufferLimit), or GetBody failed.
	GiveUpBodyNotReplayable GiveUpReason = "request body cannot be replayed"
	// GiveUpRetryAfterLimit: the server asked, with Retry-After or through
	// the classifier's Verdict.RetryAfter, for a longer wait than the limit
	// (WithRetryAfterLimit).
	GiveUpRetryAfterLimit GiveUpReason = "Retry-After exceeds the limit"
	// GiveUpRateLimitResetLimit: the server's rate limit resets later than
	// the Retry-After limit allows waiting (WithRateLimitHints).
	GiveUpRateLimitResetLimit GiveUpReason = "rate limit reset exceeds the limit"
	// GiveUpDeadline: the retry could not finish before the request's
	// deadline: the wait before it would pass the deadline, or the time
	// left once it was sent would be less than what an answer from its
	// host typically takes (the median of its recent answers), or than
	// 1 ms. A hedge is not sent either then. With WithDeadlineHeader, it is
	// also the reason when an attempt is not sent because less than 1 ms
	// is left: a first attempt so refused has Attempt 0 and Err
	// ErrNoTimeLeft.
	GiveUpDeadline GiveUpReason = "too little time left before the deadline"
	// GiveUpCanceled: the request's context ended during the wait before
	// the retry. The caller gets an *Error wrapping the context's error.
	GiveUpCanceled GiveUpReason = "context done during the wait"
	// GiveUpThrottled: adaptive throttling refused the request, or its
	// retry, since its host has been failing (WithAdaptiveThrottling).
	// Refused before any attempt, its Attempt is 0 and its Err ErrThrottled.
	GiveUpThrottled GiveUpReason = "host is throttled"
	// GiveUpNotResumable: a response body failed after its headers (cut,
	// reset, or stalled), and it may not be resumed: the event's Err is a
	// *resume.Error whose Reason says why. The event's Resume is set.
	GiveUpNotResumable GiveUpReason = "body cannot be resumed"
	// GiveUpResumeLimit: a response body failed again after the most
	// resumes a body gets (resume.Limit). The event's Resume is set.
	GiveUpResumeLimit GiveUpReason = "resume limit reached"
	// GiveUpMisdirected: a 421 answered the retry of a 421, or the base
	// cannot open a new connection for that retry (WithBase).
	GiveUpMisdirected GiveUpReason = "no new connection for a misdirected request"
	// GiveUpPaced: the request's turn to be sent to its paced host was
	// further off than pace.MaxWait or its deadline allowed
	// (WithPacing). Refused before any attempt, its Attempt is 0 and its
	// Err a *pace.Error; the caller's error wraps the *pace.Error either
	// way.
	GiveUpPaced GiveUpReason = "pace wait too long"
)

// A GiveUpEvent describes a request whose retries ended although its last
// attempt failed in a way worth retrying, for WithOnGiveUp.
type GiveUpEvent struct {
	// Request is the caller's request. Do not modify it.
	Request *http.Request
	// Attempt is the number of the last attempt, 1 for the first, or 0
	// when none was sent (GiveUpThrottled).
	Attempt int
	// Reason says why there is no retry.
	Reason GiveUpReason
	// StatusCode is the last attempt's status, or 0 when it has an error.
	StatusCode int
	// Err is the last attempt's error, or nil when it has a response.
	Err error
	// Verdict is the classifier's verdict on the last attempt.
	Verdict classify.Verdict
	// Peer is the remote address of the last attempt's connection, as
	// RetryEvent.Peer.
	Peer netip.AddrPort
	// TimeLeft is, for GiveUpDeadline, the time left before the request's
	// deadline when the Transport gave up; 0 for other reasons.
	TimeLeft time.Duration
	// HostLatency is, for GiveUpDeadline, the time the retry had to have
	// left once sent: the median of the host's recent answer times, or 0
	// while fewer than 20 are known (then 1 ms); 0 for other reasons.
	HostLatency time.Duration
	// Resume reports that the failure is a response body's, after its
	// headers, or a resume's (see RetryEvent.Resume).
	Resume bool
	// Offset is, when Resume is set, how many bytes of the body the caller
	// had received.
	Offset int64
}

// WithOnGiveUp calls fn when the Transport stops retrying a request whose
// last attempt failed in a way worth retrying, with the reason, on the
// goroutine making the request, before RoundTrip returns; or, for a
// response body that failed after its headers and is not resumed
// (GiveUpEvent.Resume), on the goroutine reading it. fn must be fast
// and must not block. Each WithOnGiveUp adds a hook: several are called in
// the order of their options. Together with WithOnRetry it sees every
// decision the Transport makes after a retryable failure, which is what
// metrics of retries need. It also sees each request that adaptive
// throttling refuses (WithAdaptiveThrottling), before any attempt, with
// reason GiveUpThrottled.
func WithOnGiveUp(fn func(GiveUpEvent)) Option {
	if fn == nil {
		panic("retryhttp: WithOnGiveUp: nil function")
	}
	return func(t *Transport) { t.onGiveUp = both(t.onGiveUp, fn) }
}

// both returns a function calling first, if any, then second.
func both[E any](first, second func(E)) func(E) {
	if first == nil {
		return second
	}
	return func(e E) {
		first(e)
		second(e)
	}
}

// reportGiveUp reports req, given up on for reason with err before any
// attempt was sent, to the give-up hooks.
func (t *Transport) reportGiveUp(req *http.Request, reason GiveUpReason, err error) {
	t.giveUpHooks(GiveUpEvent{Request: req, Reason: reason, Err: err})
}

// countGiveUp counts the request given up on for adaptive throttling, if
// on, unless e is a response body's (a body given up on after its headers
// is not counted: its request was, when RoundTrip returned). It reports
// whether the count started or ended the throttling of the request's host,
// which it logged.
func (t *Transport) countGiveUp(e GiveUpEvent) bool {
	if t.throttle == nil || e.Resume {
		return false
	}
	c := t.throttle.GaveUp(e.Request, e.Attempt, e.Reason == GiveUpCanceled, e.Err)
	return t.logThrottleChange(e.Request.Context(), c)
}

// giveUpHooks calls the give-up hooks, if any, with e.
func (t *Transport) giveUpHooks(e GiveUpEvent) {
	if t.onGiveUp == nil {
		return
	}
	if e.Reason == GiveUpDeadline {
		e.TimeLeft, e.HostLatency = t.snd.LeftAfter(e.Request, 0), t.snd.Typical(e.Request)
	}
	t.onGiveUp(e)
}

// stacked reports whether rt is a Transport of this package, or a
// RoundTripper whose Unwrap method leads to one.
func stacked(rt http.RoundTripper) bool {
	return conns.Under(rt, func(rt http.RoundTripper) bool { _, ok := rt.(*Transport); return ok })
}

// tracesPeers reports whether t learns each attempt's connection, and the
// sends its base makes again on its own, through net/http/httptrace: when
// its base is an *http.Transport (the default base is one), or leads to
// one through Unwrap, which reports them. It costs a traced attempt one
// allocation of 512 bytes beside net/http's own (through a wrapper, the
// attempt's hooks besides: returnsLast), so other bases, which may
// report nothing, are not traced: their RetryEvent.Peer is the zero
// AddrPort, and their own resends are not counted. Which attempts are
// traced: retryState.traced.
func tracesPeers(t *Transport) bool {
	return conns.Under(t.base, func(rt http.RoundTripper) bool { _, ok := rt.(*http.Transport); return ok })
}

// returnsLast reports whether rt is done with an attempt's trace hooks
// when its RoundTrip returns, so that they may be pooled: an
// *http.Transport, whose later WroteRequest a trace counts, and the stubs
// in-package tests stand for one with. A wrapper may return while the
// round trip it started goes on (evidence.New).
func returnsLast(rt http.RoundTripper) bool {
	switch rt.(type) {
	case *http.Transport, interface{ returnsLast() }:
		return true
	}
	return false
}

// logsAttempts reports whether the Transport's logger writes, for req's
// context, the lines that name an attempt's peer and the sends its base
// made again (INFO and below): only then are all its attempts traced for
// the log. A logger whose handler drops them costs a request that
// succeeds at once what no logger costs.
func (t *Transport) logsAttempts(req *http.Request) bool {
	return t.logger.Enabled(req.Context(), slog.LevelInfo)
}

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
		late = &logline.Late{Delay: delay, Left: t.snd.LeftAfter(req, delay), Typical: t.snd.Typical(req)}
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

// giveUp ends the retries of the request, whose last attempt, a, failed in
// a way worth retrying with verdict v, for the given reason (after a retry
// of delay was planned, for GiveUpDeadline): it logs the reason, reports it
// to the give-up hooks, tells a server.Handler serving the request that a
// dependency was given up on, and returns the last result.
func (s *retryState) giveUp(a *http.Request, pt *evidence.Trace, reason GiveUpReason, delay time.Duration, resp *http.Response, err error, v classify.Verdict, g *guard.Guard) (*http.Response, error) {
	if err != nil || evidence.InstanceFailure(resp, v.Misdirected, v.Throttle) {
		s.t.conns.FailedLast(s.req, pt, resp, err)
	}
	s.announceGiveUp(a, s.giveUpEvent(reason, resp, err, v, pt.Peer()), delay)
	return s.finish(a, pt, resp, err, g)
}

// announceGiveUp is reportGiveUp, and tells a server.Handler serving the
// request that a dependency was given up on.
func (s *retryState) announceGiveUp(a *http.Request, e GiveUpEvent, delay time.Duration) {
	s.reportGiveUp(a, e, delay)
	layer.MarkGaveUp(a.Context())
}

// reportGiveUp counts e, the end of the retries whose last attempt is a,
// for adaptive throttling, logs it (delay is the wait the retry would have
// had, for GiveUpDeadline) after any change of throttling its count made,
// and reports it to the give-up hooks.
func (s *retryState) reportGiveUp(a *http.Request, e GiveUpEvent, delay time.Duration) {
	if s.t.countGiveUp(e) {
		s.info = true // the change of throttling was the call's line at INFO
	}
	s.info = s.t.logGiveUp(a, e, delay, s.info)
	s.t.giveUpHooks(e)
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

// A RetryEvent describes a retry about to be made, for WithOnRetry.
type RetryEvent struct {
	// Request is the caller's request. Do not modify it.
	Request *http.Request
	// Attempt is the number of the attempt that failed, 1 for the first.
	Attempt int
	// Delay is the wait before the next attempt.
	Delay time.Duration
	// StatusCode is the failed attempt's status, or 0 when it has an error.
	StatusCode int
	// Err is the failed attempt's error, or nil when it has a response.
	Err error
	// Verdict is the classifier's verdict on the failed attempt.
	Verdict classify.Verdict
	// Peer is the remote address of the failed attempt's connection (a
	// proxy's, behind one), or the zero AddrPort when it is unknown: no
	// connection, or a base that is not, and does not unwrap to, an
	// *http.Transport. A Transport with a hook, or a logger that writes
	// INFO or below, traces every attempt's connection; one without, a
	// host's only once it failed.
	Peer netip.AddrPort
	// TimeLeft is the time that will be left before the request's deadline
	// when the retry is sent, after Delay: what its deadline headers will
	// carry (WithDeadlineHeader). It is 0 when the request has no deadline.
	TimeLeft time.Duration
	// Resume reports a resume: a response body failed after its headers
	// (Err says how), or a request for the rest of one failed, and the
	// retry asks for the rest. The hook then runs on the goroutine reading
	// the body. See WithResume.
	Resume bool
	// Offset is, when Resume is set, how many bytes of the body the caller
	// had received: the rest begins there.
	Offset int64
	// BaseResend reports a send that the base made again on its own,
	// within attempt Attempt: net/http writes a request again when the
	// connection or stream it was written to failed before any answer.
	// The server may have received both, so each counts in Attempts. Peer
	// is the connection that failed; the other fields are zero. Such sends
	// are seen only where Peer is, and not within hedged attempts.
	BaseResend bool
}

// WithOnRetry calls fn before each retry's wait, on the goroutine making the
// request, and before each resume of a response body (RetryEvent.Resume),
// on the goroutine reading the body, and for each send the base made again
// on its own (RetryEvent.BaseResend). fn must be fast and must not block:
// the retry waits for it. Each WithOnRetry adds a hook: several are
// called in the order of their options.
func WithOnRetry(fn func(RetryEvent)) Option {
	if fn == nil {
		panic("retryhttp: WithOnRetry: nil function")
	}
	return func(t *Transport) { t.onRetry = both(t.onRetry, fn) }
}

// WithLogger logs what the Transport does to l, by slog's levels. INFO is
// for what an operator acts on, at most one line a call: a call given up
// on ("retryhttp: not retrying") when its attempts, budget or time ran
// out, or its body could not be replayed or resumed; a response body that
// could not be made whole; adaptive throttling and pacing that start or
// end for a host. DEBUG is for each attempt, each send the base made again
// on its own, each decision, and the give-ups that are no operator's
// concern. Lines name the method, scheme, host and path, never headers,
// user information or query strings. docs/observability.md lists them.
// Given twice, it panics in New: to log to several places, give it one
// logger whose handler sends each record to each.
func WithLogger(l *slog.Logger) Option {
	if l == nil {
		panic("retryhttp: WithLogger: nil Logger")
	}
	return func(t *Transport) { t.setOnce(setLogger, "WithLogger"); t.logger = l }
}

// A PaceEvent describes an attempt that waited for its turn to a paced
// host (WithPacing), for WithOnPace. An attempt whose host is not paced
// waits for nothing and has no event.
type PaceEvent struct {
	// Request is the caller's request. Do not modify it.
	Request *http.Request
	// Attempt is the number of the attempt that waited, 1 for the first.
	Attempt int
	// Wait is how long the attempt waited for its turn; for one refused,
	// how long it would have had to wait.
	Wait time.Duration
	// Refused reports that the turn was further off than allowed: the
	// attempt was not sent, and the request was given up on with
	// GiveUpPaced.
	Refused bool
}

// WithOnPace calls fn after each attempt that waited for its turn to a
// paced host, before it is sent, and for each attempt refused a turn, on
// the goroutine making the request. fn must be fast and must not block.
// Each WithOnPace adds a hook: several are called in the order of their
// options.
func WithOnPace(fn func(PaceEvent)) Option {
	if fn == nil {
		panic("retryhttp: WithOnPace: nil function")
	}
	return func(t *Transport) { t.onPace = both(t.onPace, fn) }
}

// logPaceChange logs at INFO that pacing started (with its rate, when
// known) or ended for the host of req, as c says.
func (t *Transport) logPaceChange(req *http.Request, c pacing.Change) {
	switch c.Event {
	case pacing.Started:
		var attrs []slog.Attr
		if c.Rate > 0 {
			attrs = append(attrs, slog.Float64("rate", c.Rate))
		}
		t.log().Host(req.Context(), "retryhttp: pacing started", req.URL.Scheme, req.URL.Host, attrs...)
	case pacing.Stopped:
		t.log().Host(req.Context(), "retryhttp: pacing ended", req.URL.Scheme, req.URL.Host)
	}
}
