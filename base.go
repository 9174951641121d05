package retryhttp

import (
	"net/http"

	"github.com/retryhttp/retryhttp/internal/conns"
	"github.com/retryhttp/retryhttp/internal/wire"
)

// The base a Transport sends attempts through: by default one of its own,
// with TLS sessions resumed, and a clone of it that dials a connection per
// request for a retry that must not go down the one that failed; and each
// attempt's send through it, within the per-attempt timeout.

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
func (t *Transport) exchange(rt http.RoundTripper, a *http.Request) (*http.Response, error) {
	switch {
	case t.answers != nil && hasDeadline(a.Context()):
		return t.sendTimed(rt, a)
	case t.attemptTimeout <= 0:
		return conns.CheckResult(rt.RoundTrip(a))
	default:
		return t.sendWithTimeout(rt, a)
	}
}

// sendWithTimeout is exchange with a per-attempt timeout, without
// recording.
func (t *Transport) sendWithTimeout(rt http.RoundTripper, a *http.Request) (*http.Response, error) {
	return conns.WithTimeout(rt, a, t.attemptTimeout)
}
