package retryhttp

import (
	"context"
	"errors"
	"net/http/httptrace"
	"reflect"
	"sync/atomic"
)

// ErrBaseResend is the error of an attempt that the base transport tried to
// resend on its own, and that the Transport stopped before anything more
// was written, because the request may not be sent twice. net/http resends
// some requests by itself: over HTTP/2 after a stream reset with
// REFUSED_STREAM or PROTOCOL_ERROR or after a GOAWAY, over HTTP/1 after a
// reused connection failed. A PROTOCOL_ERROR reset does not prove that the
// server did not process the request, so none of these resends is allowed
// for a request the Transport guards; whether the first send reached the
// server is unknown.
var ErrBaseResend = errors.New("retryhttp: stopped the base transport from resending a request that may not be sent twice")

// A guard watches one attempt of a request that may not be sent twice (a
// non-idempotent request without an idempotency key), through
// net/http/httptrace, for two things:
//
//   - Proof that the attempt never reached the server: the base asked for a
//     connection (GetConn) and had obtained none (GotConn) when its
//     RoundTrip returned. net/http's Transport calls both hooks on the
//     goroutine of RoundTrip, before it writes any byte of the request, over
//     HTTP/1 and HTTP/2 alike, so once RoundTrip has returned no late hook
//     can change the verdict. Hooks that fire on other goroutines, such as
//     WroteHeaders (HTTP/2 writes headers on a goroutine of its own, and may
//     write them after RoundTrip returned), are never used as evidence.
//   - A resend by the base itself: each send obtains a connection, so a
//     second GotConn within one attempt is net/http about to resend. The
//     guard cancels the attempt's context there, on the goroutine that is
//     about to write, and net/http checks the context before it writes.
//
// A guard is used by one attempt only: its hooks close over it, and a base
// that called them late must not reach another request's guard.
type guard struct {
	asked  atomic.Bool  // GetConn fired: the base reports through httptrace
	conns  atomic.Int32 // GotConn calls
	cancel context.CancelCauseFunc
	trace  httptrace.ClientTrace
}

// startGuard returns a guard for one attempt and the attempt's context,
// derived from ctx, carrying the guard's hooks composed with any trace the
// caller set, whose hooks still fire.
func startGuard(ctx context.Context) (*guard, context.Context) {
	g := &guard{}
	g.trace.GetConn = func(string) { g.asked.Store(true) }
	g.trace.GotConn = func(httptrace.GotConnInfo) {
		if g.conns.Add(1) > 1 {
			g.cancel(ErrBaseResend)
		}
	}
	ctx, g.cancel = context.WithCancelCause(ctx)
	return g, httptrace.WithClientTrace(ctx, &g.trace)
}

// provedUnsent reports whether the attempt provably never reached the
// server: a connection was asked for and none was obtained. Without
// evidence that the base reports through httptrace (a transport other than
// net/http's may not), it reports false. Call it only after the base's
// RoundTrip has returned.
func (g *guard) provedUnsent() bool {
	return g != nil && g.asked.Load() && g.conns.Load() == 0
}

// gotConn reports whether a connection was obtained for the attempt.
func (g *guard) gotConn() bool {
	return g != nil && g.conns.Load() > 0
}

// stoppedResend reports whether the guard stopped a resend by the base.
func (g *guard) stoppedResend() bool {
	return g != nil && g.conns.Load() > 1
}

// end releases the attempt's context once its outcome is known and its
// response, if any, is no longer being read.
func (g *guard) end() {
	if g != nil {
		g.cancel(context.Canceled)
	}
}

// HTTP/2 error codes (RFC 9113, section 7) that the classifiers read.
const (
	h2InternalError = 0x2
	h2RefusedStream = 0x7
)

// h2StreamErrorCode returns the error code of an HTTP/2 stream reset in
// err's chain, as net/http's bundled HTTP/2 transport and
// golang.org/x/net/http2 report one, and whether there is one. Both types
// are read by reflection, by their package, name and fields: net/http's is
// unexported, and importing x/net would burden every user with it. A
// server controls the code of the reset but not the type of the error, so
// no text a server sends (a status line, GOAWAY debug data) can make an
// error look like a stream reset.
func h2StreamErrorCode(err error) (uint32, bool) {
	for _, e := range errorChain(err, 8) {
		v := reflect.ValueOf(e)
		t := v.Type()
		if t.Kind() != reflect.Struct {
			continue
		}
		switch {
		case t.PkgPath() == "net/http" && t.Name() == "http2StreamError",
			t.PkgPath() == "golang.org/x/net/http2" && t.Name() == "StreamError":
		default:
			continue
		}
		if code := v.FieldByName("Code"); code.IsValid() && code.Kind() == reflect.Uint32 {
			return uint32(code.Uint()), true
		}
	}
	return 0, false
}

// errorChain returns err and the errors it wraps, depth first, at most n.
func errorChain(err error, n int) []error {
	var out []error
	var walk func(error)
	walk = func(e error) {
		if e == nil || len(out) >= n {
			return
		}
		out = append(out, e)
		switch u := e.(type) {
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		case interface{ Unwrap() []error }:
			for _, w := range u.Unwrap() {
				walk(w)
			}
		}
	}
	walk(err)
	return out
}

// refusedStream reports an HTTP/2 REFUSED_STREAM reset, by which the server
// says that it did not process the request (RFC 9113, section 8.7).
func refusedStream(err error) bool {
	code, ok := h2StreamErrorCode(err)
	return ok && code == h2RefusedStream
}

// streamReset reports an HTTP/2 stream reset with INTERNAL_ERROR, which is
// how a server aborts a request it failed while handling: the HTTP/2 form of
// a connection reset.
func streamReset(err error) bool {
	code, ok := h2StreamErrorCode(err)
	return ok && code == h2InternalError
}
