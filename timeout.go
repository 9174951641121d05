package retryhttp

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/retryhttp/retryhttp/internal/attempt"
	"github.com/retryhttp/retryhttp/internal/wire"
)

// ErrAttemptTimeout is the cause of an attempt cut short by the per-attempt
// timeout (WithAttemptTimeout). Such an attempt is retried, and its retry
// costs the budget's timeout cost.
var ErrAttemptTimeout = errAttemptTimeout()

func errAttemptTimeout() error { return wire.ErrAttemptTimeout }

// send makes one attempt through the base transport, as exchange does,
// and logs its outcome.
func (t *Transport) send(a *http.Request) (*http.Response, error) {
	var resp *http.Response
	var err error
	if t.answers == nil && t.attemptTimeout <= 0 {
		resp, err = checkResult(t.base.RoundTrip(a)) // exchange's common case, without its call
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
func (t *Transport) exchange(rt http.RoundTripper, a *http.Request) (*http.Response, error) {
	switch {
	case t.answers != nil && hasDeadline(a.Context()):
		return t.sendTimed(rt, a)
	case t.attemptTimeout <= 0:
		return checkResult(rt.RoundTrip(a))
	default:
		return t.sendWithTimeout(rt, a)
	}
}

// sendWithTimeout is exchange with a per-attempt timeout, without
// recording.
func (t *Transport) sendWithTimeout(rt http.RoundTripper, a *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancelCause(a.Context())
	timer := time.AfterFunc(t.attemptTimeout, func() { cancel(ErrAttemptTimeout) })
	resp, err := rt.RoundTrip(a.WithContext(ctx))
	fired := !timer.Stop()
	resp, err = checkResult(resp, err)
	if fired && a.Context().Err() == nil {
		// The attempt ran out of time, though the response headers may have
		// arrived just as it did: their body is cut off either way.
		if resp != nil {
			resp.Body.Close()
		}
		cancel(ErrAttemptTimeout)
		if err == nil {
			err = context.DeadlineExceeded
		}
		return nil, &attemptTimeoutError{err: err}
	}
	if err != nil {
		cancel(context.Canceled)
		return nil, err
	}
	// The response is the caller's to read: keep its context alive until
	// the body is closed.
	resp.Body = attempt.CancelBody(resp.Body, func() { cancel(context.Canceled) })
	return resp, nil
}

// attemptTimeoutError is the error of an attempt cut short by the
// per-attempt timeout.
type attemptTimeoutError struct{ err error }

func (e *attemptTimeoutError) Error() string {
	if errors.Is(e.err, ErrAttemptTimeout) {
		// net/http reports the context's cause, which is ErrAttemptTimeout
		// itself: say it once.
		return e.err.Error()
	}
	return ErrAttemptTimeout.Error() + ": " + e.err.Error()
}
func (e *attemptTimeoutError) Unwrap() []error { return []error{ErrAttemptTimeout, e.err} }
func (e *attemptTimeoutError) Timeout() bool   { return true }
