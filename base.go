package retryhttp

import (
	"context"
	"crypto/tls"
	"errors"
	"net/http"
	"time"

	"github.com/hashicorp/go-cleanhttp"
	"github.com/retryhttp/retryhttp/base"
	"github.com/retryhttp/retryhttp/internal/attempt"
	"github.com/retryhttp/retryhttp/internal/wire"
)

// The base a Transport sends attempts through: by default one of its own,
// with TLS sessions resumed, and a clone of it that dials a connection per
// request for a retry that must not go down the one that failed; and each
// attempt's send through it, within the per-attempt timeout.

// newConns returns the transport of a retry that must not go down the
// connection that failed, a misdirected request's (classify.Verdict's
// Misdirected): a clone of the base with keep-alives off, so that each of
// its requests dials a connection of its own, closed after its response,
// over HTTP/2 too, where the base's connection to the host carries every
// other request and cannot be left without cutting theirs. It is made on
// first use, and shares the base's dialer (a base.Dialer dials the
// addresses that failed last) and TLS config (its session cache: the new
// connection resumes TLS). It returns nil when the base is not an
// *http.Transport, or when its HTTP/2 is its own (golang.org/x/net/http2's
// ConfigureTransport), whose pool the clone would share, and the caller's
// transport is left as it is.
func (t *Transport) newConns() *http.Transport {
	t.freshOnce.Do(func() {
		ht, ok := t.base.(*http.Transport)
		if !ok {
			return
		}
		c := ht.Clone()
		if c.TLSNextProto["h2"] != nil {
			// net/http's own HTTP/2 is set up by each transport for
			// itself, after Clone; an upgrade in the map came with the
			// base, and puts the clone's connections in the base's pool.
			return
		}
		c.DisableKeepAlives = true
		t.fresh = c
	})
	return t.fresh
}

// resumeTLS gives tr, a transport of the Transport's own, a TLS client
// session cache, unless its TLS config has one: a new connection to a host
// it has reached before (a retry's, once a failed one was closed) then
// resumes the session, an abbreviated handshake that spares the server the
// signature and the certificate a full one costs. The cache holds the
// sessions of crypto/tls's default of 64 hosts, the least recently used
// going first. A config tr has is cloned, not changed, in case another
// transport shares it.
func resumeTLS(tr *http.Transport) {
	cfg := &tls.Config{}
	if tr.TLSClientConfig != nil {
		if tr.TLSClientConfig.ClientSessionCache != nil {
			return
		}
		cfg = tr.TLSClientConfig.Clone()
	}
	cfg.ClientSessionCache = tls.NewLRUClientSessionCache(0)
	tr.TLSClientConfig = cfg
}

// defaultBase returns go-cleanhttp's pooled transport, keeping as many idle
// connections per host as in all (100). Its own per-host default,
// GOMAXPROCS+1, closes the connections of concurrent callers as soon as they
// finish, so a struggling dependency would see a new connection, and
// perhaps a TLS handshake, for most requests just when it can least afford
// them. The connections it does open resume TLS sessions (resumeTLS).
func defaultBase() *http.Transport {
	tr := cleanhttp.DefaultPooledTransport()
	tr.MaxIdleConnsPerHost = defaultIdlePerHost
	tr.DialContext = base.NewDialer().DialContext
	resumeTLS(tr)
	reportProxyRefusals(tr, true)
	return tr
}

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
