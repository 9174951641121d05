package retryhttp

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptrace"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ErrBaseResend is the error of an attempt that the base transport tried to
// resend on its own, and that the Transport stopped before anything more
// was written, because the request may not be sent twice. net/http resends
// some requests by itself: over HTTP/2 after a stream reset with
// REFUSED_STREAM or PROTOCOL_ERROR or after a GOAWAY, over HTTP/1 after a
// reused connection failed. A PROTOCOL_ERROR reset does not prove that the
// server did not process the request, so none of these resends is allowed
// for a request the Transport guards, but one: net/http's HTTP/1 resend of
// a request of which nothing was written, on a reused connection that the
// server had closed, which proves that the first send never reached the
// server. Whether a stopped send reached the server is unknown.
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
// One resend is let through: net/http's HTTP/1 Transport sends a request
// that it does not consider replayable (no idempotent method, no
// idempotency key entry) again only when nothing of it was written to a
// reused connection, its nothingWrittenError; or, for HTTP/2, when no
// connection was cached, before anything was sent. Its connection loop
// (Transport.getConn) then obtains the next connection, so a GotConn
// called from there, after a reused connection, follows a send that
// provably wrote nothing. Every other resend, among them every one that
// HTTP/2 makes itself, is stopped.
//
// A guard is used by one attempt only: its hooks close over it, and a base
// that called them late must not reach another request's guard. It holds
// what its attempt needs besides, so that a guarded attempt allocates it
// and its two hooks only: the attempt's request, its context, and the
// wrapper of the response body that ends the context.
type guard struct {
	flags atomic.Uint32 // guardAsked | guardReused | guardStopped | guardProves
	conns atomic.Int32  // GotConn calls
	ctx   guardCtx      // holds the trace
	req   http.Request  // the attempt, under ctx
	resp  io.ReadCloser // the attempt's response body, once wrapped
}

// A guard's flags. It is kept small (512 bytes, a size class of its own)
// since every guarded attempt allocates one.
const (
	guardAsked   = 1 << iota // GetConn fired: the base reports through httptrace
	guardReused              // the last connection obtained had carried a request before
	guardStopped             // a resend was stopped
	// guardProves is set when net/http does not consider the request
	// replayable, so that its HTTP/1 resend proves nothing was written.
	guardProves
)

// is reports whether every flag of f is set.
func (g *guard) is(f uint32) bool { return g.flags.Load()&f == f }

// set sets the flags of f when on is true, and clears them otherwise.
func (g *guard) set(f uint32, on bool) {
	if on {
		g.flags.Or(f)
	} else {
		g.flags.And(^f)
	}
}

// startGuard returns a guard for one attempt, whose header is h, and the
// attempt's context, derived from ctx, carrying the guard's hooks composed
// with any trace the caller set, whose hooks still fire.
func startGuard(ctx context.Context, h http.Header) (*guard, context.Context) {
	g := &guard{}
	g.set(guardProves, !keyEntry(h))
	g.ctx.trace.GetConn = func(string) { g.set(guardAsked, true) }
	g.ctx.trace.GotConn = func(info httptrace.GotConnInfo) {
		if g.conns.Add(1) > 1 && !(g.is(guardProves|guardReused) && calledFrom(http1GetConn)) {
			g.set(guardStopped, true)
			g.ctx.cancel(ErrBaseResend)
		}
		g.set(guardReused, info.Reused)
	}
	g.ctx.parent, g.ctx.carries = ctx, true
	if traceKey == nil || httptrace.ContextClientTrace(ctx) != nil {
		// The caller's trace is composed with the guard's, as
		// httptrace does it.
		g.ctx.parent, g.ctx.carries = httptrace.WithClientTrace(ctx, &g.ctx.trace), false
	}
	return g, &g.ctx
}

// request returns the attempt's request: a copy of req under ctx, held by
// g when there is a guard.
func (g *guard) request(req *http.Request, ctx context.Context) *http.Request {
	if g == nil {
		return req.WithContext(ctx)
	}
	g.req = *req.WithContext(ctx)
	return &g.req
}

// wrap returns the attempt's response body, made to end the attempt's
// context when the caller closes it.
func (g *guard) wrap(body io.ReadCloser) io.ReadCloser {
	if _, ok := body.(io.Writer); ok {
		return newCancelBody(body, g.end)
	}
	g.resp = body
	return (*guardBody)(g)
}

// guardBody is a guard as its attempt's response body: it ends the
// attempt's context when the body is closed.
type guardBody guard

func (b *guardBody) Read(p []byte) (int, error) { return b.resp.Read(p) }

func (b *guardBody) Close() error {
	err := b.resp.Close()
	(*guard)(b).end()
	return err
}

// traceKey is the context key under which net/http/httptrace keeps a
// request's trace, learnt by asking httptrace for the trace of a context
// that records the key it is asked for, so that a guard's context can carry
// the guard's trace without a context of its own. It is nil if httptrace
// is found to look traces up some other way; guards then use
// httptrace.WithClientTrace.
var traceKey any

func init() {
	probe := &keyProbe{Context: context.Background()}
	httptrace.ContextClientTrace(probe)
	traceKey = probe.key
	c := &guardCtx{parent: context.Background(), carries: true}
	if traceKey != nil && httptrace.ContextClientTrace(c) != &c.trace {
		traceKey = nil
	}
}

type keyProbe struct {
	context.Context
	key any
}

func (p *keyProbe) Value(key any) any {
	p.key = key
	return nil
}

// A guardCtx is a guarded attempt's context: the caller's, carrying the
// guard's trace, and cancelled by the guard. The cancellable context is a
// context.WithCancelCause of the caller's, made only once something asks
// for its Done channel or the guard cancels it, so that an attempt over a
// base that never asks allocates nothing for it.
type guardCtx struct {
	trace  httptrace.ClientTrace // the guard's hooks
	parent context.Context
	// inner and cancelInner are set once, under mu, before made is.
	inner       context.Context
	cancelInner context.CancelCauseFunc
	made        atomic.Bool
	mu          sync.Mutex
	ended       bool // ended before inner was made
	carries     bool // the context answers for trace itself; otherwise parent carries it
}

func (c *guardCtx) Deadline() (time.Time, bool) { return c.parent.Deadline() }

func (c *guardCtx) Done() <-chan struct{} {
	if !c.made.Load() {
		c.mu.Lock()
		c.makeInner()
		c.mu.Unlock()
	}
	return c.inner.Done()
}

func (c *guardCtx) Err() error {
	if c.made.Load() {
		return c.inner.Err()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.made.Load() {
		return c.inner.Err()
	}
	if c.ended {
		return context.Canceled
	}
	return c.parent.Err()
}

func (c *guardCtx) Value(key any) any {
	if c.carries && key != nil && key == traceKey {
		return &c.trace
	}
	if c.made.Load() {
		return c.inner.Value(key)
	}
	return c.parent.Value(key)
}

// makeInner makes the cancellable context, cancelled at once if the guard
// has cancelled it already; c.mu is held.
func (c *guardCtx) makeInner() {
	if c.made.Load() {
		return
	}
	c.inner, c.cancelInner = context.WithCancelCause(c.parent)
	if c.ended {
		c.cancelInner(context.Canceled)
	}
	c.made.Store(true)
}

// cancel cancels the context with cause. Like a CancelCauseFunc, it may be
// called more than once; the first cause stays.
func (c *guardCtx) cancel(cause error) {
	c.mu.Lock()
	c.makeInner()
	c.mu.Unlock()
	c.cancelInner(cause)
}

// end cancels the context once the attempt is over. A context that nothing
// has asked to wait on is only marked cancelled: it is made cancelled if
// asked later.
func (c *guardCtx) end() {
	c.mu.Lock()
	if !c.made.Load() {
		c.ended = true
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	c.cancelInner(context.Canceled)
}

// keyEntry reports whether h has an Idempotency-Key or X-Idempotency-Key
// entry, whatever its value: what makes net/http consider a POST
// replayable (see http.Request.isReplayable).
func keyEntry(h http.Header) bool {
	_, ok := h["Idempotency-Key"]
	if !ok {
		_, ok = h["X-Idempotency-Key"]
	}
	return ok
}

// The functions of net/http's HTTP/1 Transport whose calls prove that a
// guarded request is sent again only because nothing of it was written:
// the connection loop, which calls GotConn for each HTTP/1 connection it
// obtains, and the rewind of a body that was read, which calls GetBody.
// net/http gives no other way to tell its HTTP/1 resend from its HTTP/2
// ones; should it rename them, no resend is let through.
const (
	http1GetConn    = "net/http.(*Transport).getConn"
	http1RewindBody = "net/http.rewindBody"
)

// calledFrom reports whether the caller of the hook that calls it was fn,
// seen through the frames of httptrace's composition of traces.
func calledFrom(fn string) bool {
	var pcs [24]uintptr
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs[:])])
	for {
		f, more := frames.Next()
		switch {
		case f.Function == fn:
			return true
		case !strings.HasPrefix(f.Function, "reflect.") && !strings.HasPrefix(f.Function, "runtime.") &&
			!strings.HasPrefix(f.Function, "net/http/httptrace.") && !strings.HasPrefix(f.Function, "github.com/retryhttp/retryhttp."):
			return false
		}
		if !more {
			return false
		}
	}
}

// rewindOnly returns a GetBody for a guarded attempt that gives net/http's
// HTTP/1 Transport a body from src for its resend of a request of which
// nothing was written, and refuses every other caller. HTTP/2 asks for a
// body before it resends after failures that prove nothing; the guard stops
// that resend, but src must not be asked while HTTP/2 may still be reading
// the body it replaces.
func rewindOnly(src bodySource) func() (io.ReadCloser, error) {
	return func() (io.ReadCloser, error) {
		if !calledFrom(http1RewindBody) {
			return nil, errNoResend
		}
		return src.resend()
	}
}

// A bodySource gives the body of a resend.
type bodySource interface {
	resend() (io.ReadCloser, error)
}

// getBodyFunc is a Request.GetBody as a bodySource.
type getBodyFunc func() (io.ReadCloser, error)

func (f getBodyFunc) resend() (io.ReadCloser, error) { return f() }

// errNoResend is what a guarded attempt's GetBody tells a base that asks
// for a body to resend with, other than after proof that nothing was sent.
var errNoResend = errors.New("retryhttp: the request may not be sent twice")

// provedUnsent reports whether the attempt provably never reached the
// server: a connection was asked for and none was obtained. Without
// evidence that the base reports through httptrace (a transport other than
// net/http's may not), it reports false. Call it only after the base's
// RoundTrip has returned.
func (g *guard) provedUnsent() bool {
	return g != nil && g.is(guardAsked) && g.conns.Load() == 0
}

// gotConn reports whether a connection was obtained for the attempt.
func (g *guard) gotConn() bool {
	return g != nil && g.conns.Load() > 0
}

// stoppedResend reports whether the guard stopped a resend by the base.
func (g *guard) stoppedResend() bool {
	return g != nil && g.is(guardStopped)
}

// end releases the attempt's context once its outcome is known and its
// response, if any, is no longer being read.
func (g *guard) end() {
	if g != nil {
		g.ctx.end()
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
