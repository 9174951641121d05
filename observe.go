package retryhttp

import (
	"net/http"
	"net/netip"
	"time"

	"github.com/retryhttp/retryhttp/classify"
	"github.com/retryhttp/retryhttp/internal/giveup"
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
		e.TimeLeft, e.HostLatency = t.deadlineFacts(e.Request)
	}
	t.onGiveUp(e)
}

// stacked reports whether rt is a Transport of this package, or a
// RoundTripper whose Unwrap method leads to one.
func stacked(rt http.RoundTripper) bool {
	for range 8 { // a bound, should wrappers unwrap to each other
		switch b := rt.(type) {
		case *Transport:
			return true
		case interface{ Unwrap() http.RoundTripper }:
			rt = b.Unwrap()
		default:
			return false
		}
	}
	return false
}

// tracesPeers reports whether t learns each attempt's connection, and the
// sends its base makes again on its own, through net/http/httptrace: when
// its base is an *http.Transport (the default base is one), or a
// RoundTripper whose Unwrap method leads to one, which reports them, and
// whose base.Dialer, if it dials with one, sends a retry to another address. It
// costs a traced attempt one allocation of 512 bytes beside net/http's own,
// so other bases, which may report nothing, are not traced: their
// RetryEvent.Peer is the zero AddrPort, and their own resends are not
// counted. Which attempts are traced: retryState.traced.
func tracesPeers(t *Transport) bool {
	rt := t.base
	for range 8 { // a bound, should wrappers unwrap to each other
		switch b := rt.(type) {
		case *http.Transport:
			return true
		case interface{ Unwrap() http.RoundTripper }:
			rt = b.Unwrap()
		default:
			return false
		}
	}
	return false
}
