package conns

import (
	"context"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/retryhttp/retryhttp/internal/attempt"
	"github.com/retryhttp/retryhttp/internal/cancelctx"
	"github.com/retryhttp/retryhttp/internal/wire"
)

// WithTimeout sends a through rt, as CheckResult checks it, cut short with
// wire.ErrAttemptTimeout as its cause once d has passed before its
// response headers. A response's body is read in a context of its own,
// released when the body is closed.
//
// The attempt's context, its request and the wrapper of its body are one
// allocation (a timed), the context a cancelctx.Ctx, which makes its Done
// channel only when asked; its timer is two more. Timers are not pooled: one
// made in a testing/synctest bubble panics when used outside it, and a
// caller's tests may run in bubbles.
func WithTimeout(rt http.RoundTripper, a *http.Request, d time.Duration) (*http.Response, error) {
	t := &timed{}
	t.ctx.Init(a.Context())
	t.req = *a.WithContext(&t.ctx)
	timer := time.AfterFunc(d, t.fire)
	resp, err := rt.RoundTrip(&t.req)
	fired := !timer.Stop()
	resp, err = CheckResult(resp, err)
	if fired && a.Context().Err() == nil {
		// The attempt ran out of time, though the response headers may have
		// arrived just as it did: their body is cut off either way.
		if resp != nil {
			resp.Body.Close()
		}
		t.ctx.Cancel(wire.ErrAttemptTimeout)
		if err == nil {
			err = context.DeadlineExceeded
		}
		return nil, &TimeoutError{Err: err}
	}
	if err != nil {
		t.ctx.Cancel(context.Canceled)
		return nil, err
	}
	// The response is the caller's to read: keep its context alive until
	// the body is closed.
	if _, ok := resp.Body.(io.Writer); ok {
		resp.Body = attempt.CancelBody(resp.Body, func() { t.ctx.Cancel(context.Canceled) })
	} else {
		t.body = resp.Body
		resp.Body = (*timedBody)(t)
	}
	return resp, nil
}

// A timed is an attempt under the per-attempt timeout: its context, its
// request, and the response body it wraps.
type timed struct {
	ctx  cancelctx.Ctx
	req  http.Request
	body io.ReadCloser
}

// timedBody is a timed as its attempt's response body: it releases the
// attempt's context once the body is closed.
type timedBody timed

func (b *timedBody) Read(p []byte) (int, error) { return b.body.Read(p) }

func (b *timedBody) Close() error {
	err := b.body.Close()
	b.ctx.Cancel(context.Canceled)
	return err
}

// fire cuts the attempt short: its time is up.
func (t *timed) fire() { t.ctx.Cancel(wire.ErrAttemptTimeout) }

// A TimeoutError is the error of an attempt cut short by the per-attempt
// timeout: it is wire.ErrAttemptTimeout, and Err, what the base returned.
type TimeoutError struct{ Err error }

func (e *TimeoutError) Error() string {
	if errors.Is(e.Err, wire.ErrAttemptTimeout) {
		// net/http reports the context's cause, which is
		// ErrAttemptTimeout itself: say it once.
		return e.Err.Error()
	}
	return wire.ErrAttemptTimeout.Error() + ": " + e.Err.Error()
}

// Unwrap returns wire.ErrAttemptTimeout and Err.
func (e *TimeoutError) Unwrap() []error { return []error{wire.ErrAttemptTimeout, e.Err} }

// Timeout reports true: the attempt timed out.
func (e *TimeoutError) Timeout() bool { return true }
