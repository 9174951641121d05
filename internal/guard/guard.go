// Package guard sends a request that may not be sent twice (a POST
// without an idempotency key) at most once. Given one attempt, it watches
// the attempt through net/http/httptrace and decides two things: whether
// the attempt provably never reached the server (a connection was asked
// for and none was obtained), so that the loop may retry it; and, for each
// send net/http makes again on its own, whether that send may go (the one
// before it provably wrote nothing or was refused unprocessed) or must be
// stopped before it writes a byte. It never retries, never logs, and never
// lets a second send through on a guess: what it cannot prove, it stops.
package guard

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptrace"
	"sync"
	"sync/atomic"

	"github.com/retryhttp/retryhttp/internal/attempt"
	"github.com/retryhttp/retryhttp/internal/cancelctx"
)

// ErrResendStopped is retryhttp.ErrResendStopped: the error of an attempt
// whose second send by the base the guard stopped.
var ErrResendStopped = errors.New("retryhttp: stopped the base transport from resending a request that may not be sent twice")

// A Guard watches one attempt of a request that may not be sent twice (a
// non-idempotent request without an idempotency key) through
// net/http/httptrace. It proves that the attempt never reached the server,
// and it makes a second execution by the base impossible, not unlikely.
//
// The proof: the base asked for a connection (GetConn) and had obtained
// none (GotConn) when its RoundTrip returned. net/http's Transport calls
// both hooks on the goroutine of RoundTrip, before it writes any byte of the
// request, over HTTP/1 and HTTP/2 alike, so once RoundTrip has returned no
// late hook can change the verdict. Hooks that fire on other goroutines,
// such as WroteHeaders, are never used as evidence.
//
// A second send: every send of net/http's obtains a connection first, and
// GotConn is called on the goroutine of RoundTrip just before the send. The
// guard reads from the stack which of net/http's connection loops called
// it, and decides there, for each way net/http resends (the Go 1.26 source:
// transport.go, h2_bundle.go):
//
//   - HTTP/1, Transport.roundTrip's loop (persistConn.shouldRetryRequest). A
//     request that net/http does not consider replayable is sent again only
//     after a nothingWrittenError: not one byte of it reached the reused
//     connection. Request.isReplayable calls a POST replayable when its
//     header has an Idempotency-Key or X-Idempotency-Key entry, whatever its
//     value, so a guarded attempt never carries one (a blank key travels
//     under the lower-case name: see unreplayable). A send that follows a
//     send of this loop is therefore let through: the one before it wrote
//     nothing.
//   - HTTP/2, http2Transport.RoundTripOpt's loop (http2shouldRetryRequest,
//     http2canRetryError). net/http resends after REFUSED_STREAM, a
//     PROTOCOL_ERROR reset from the server, a GOAWAY, and a connection that
//     could not open the stream (errClientConnUnusable). Before the error
//     reaches that loop, a PROTOCOL_ERROR reset has marked its connection
//     not to be reused and a GOAWAY its connection unusable, so a resend
//     that goes out on the connection of the send before it follows
//     REFUSED_STREAM, which says the server did not process the request (RFC
//     9113, section 8.7), or a stream never opened. That resend is let
//     through; every other is stopped.
//   - A stop is made before the send writes anything, not raced with it:
//     the guard cancels the attempt's context from within GotConn. Over
//     HTTP/2 the send then starts on a goroutine of its own, which checks
//     the context without blocking, under the connection's write lock,
//     before it encodes the header block (encodeAndWriteHeaders): the
//     cancel happened before that goroutine started, so the check sees it,
//     and nothing of the send is written. Over HTTP/1 net/http queues the
//     request to the connection's write loop without looking at the
//     context: the guard closes the connection it has just been handed
//     (an HTTP/1 connection carries one request at a time), so that the
//     write fails, and the loop finds the context cancelled before it asks
//     for another. An HTTP/1 send is stopped only when net/http's HTTP/2
//     loop has handed the request over to the HTTP/1 one after a failure
//     (no HTTP/2 connection is left, and the next one speaks HTTP/1, as
//     behind a balancer whose instances differ).
//   - A base other than net/http's Transport (golang.org/x/net's HTTP/2
//     Transport, a RoundTripper of one's own) has every second send stopped
//     by the cancel, which is then as good as that base's check of its
//     context.
//
// A request body reaches net/http's resends only through GetBody, called on
// the goroutine of RoundTrip before the next connection is obtained. A
// guarded attempt's GetBody is http.NewRequest's, whose bodies share
// nothing, or else one (see RewindOnly) that gives net/http's HTTP/1 rewind
// the body at once, its HTTP/2 resend a body that asks for its bytes only
// when first read, which happens after the guard let the send through and
// its header block was written, and any other caller ErrResendStopped.
//
// A guard is used by one attempt only: a base that called its hooks late
// must not reach another request's guard. Its hooks close over it, or,
// when its base is net/http's Transport itself (Base.Direct), which calls
// GetConn and GotConn on the goroutine of RoundTrip before RoundTrip
// returns, come from a pool and go back to it once the base's RoundTrip has
// returned (Returned). It holds what its attempt needs besides, so that a
// guarded attempt allocates it only, its two hooks over another base, and
// its context's Done channel once net/http asks for it (cancelctx): the
// attempt's request, its context, and the wrapper of the response body
// that ends the context.
//
// Over net/http's Transport, the first connection's loop is read from the
// connection itself, which tells it, rather than from the stack, which
// costs a microsecond: net/http speaks HTTP/2 on a *tls.Conn that
// negotiated "h2", and on a connection without TLS only when its Protocols
// allow unencrypted HTTP/2 (Base.H2C), when the stack is read still.
type Guard struct {
	flags atomic.Uint32 // guardAsked | guardStopped | guardHTTP1 | guardHTTP2
	conns atomic.Int32  // GotConn calls
	ctx   guardCtx      // holds the trace
	req   http.Request  // the attempt, under ctx
	// held is, while the base's RoundTrip runs, the connection that
	// net/http's HTTP/2 loop obtained last (a net.Conn is an
	// io.ReadCloser), and then the attempt's response body, once wrapped.
	// GotConn sets it only when called from net/http's HTTP/2 loop, which
	// calls it on the goroutine of RoundTrip before RoundTrip returns; wrap
	// sets it after. Sharing one field keeps the guard in its size class.
	held io.ReadCloser
}

// A guard's flags. It is kept small (576 bytes, a size class of its own)
// since every guarded attempt allocates one.
const (
	guardAsked   = 1 << iota // GetConn fired: the base reports through httptrace
	guardStopped             // a resend was stopped
	guardHTTP1               // the last connection came from net/http's HTTP/1 loop
	guardHTTP2               // the last connection came from net/http's HTTP/2 loop
)

// set sets the flags of f when on is true, and clears them otherwise.
func (g *Guard) set(f uint32, on bool) {
	if on {
		g.flags.Or(f)
	} else {
		g.flags.And(^f)
	}
}

// A Base is what a guard knows of the base its attempt goes through.
type Base struct {
	// Direct reports a base that is net/http's Transport itself, not a
	// wrapper of one: it calls a guard's hooks only on the goroutine of
	// its RoundTrip, before RoundTrip returns.
	Direct bool
	// H2C reports that it may speak HTTP/2 over a connection without TLS
	// (its Protocols allow unencrypted HTTP/2).
	H2C bool
}

// BaseOf returns what a guard knows of rt, direct when the caller knows rt
// to call hooks as net/http's Transport does (rt is one, or stands for one).
func BaseOf(rt http.RoundTripper, direct bool) Base {
	t, ok := rt.(*http.Transport)
	return Base{Direct: direct, H2C: ok && t.Protocols != nil && t.Protocols.UnencryptedHTTP2()}
}

// hooks are a guard's GetConn and GotConn, pooled for guards over a Direct
// base: each finds its guard through g, set before the attempt is sent and
// read by the hooks only while they are the guard's.
type hooks struct {
	trace httptrace.ClientTrace
	g     *Guard
}

var hooksPool = sync.Pool{New: func() any {
	h := &hooks{}
	h.trace.GetConn = func(string) { h.g.set(guardAsked, true) }
	h.trace.GotConn = func(info httptrace.GotConnInfo) { h.g.Obtained(info.Conn) }
	return h
}}

// Start returns a guard for one attempt through base and the attempt's
// context, derived from ctx, carrying the guard's hooks composed with any
// trace the caller set, whose hooks still fire.
func Start(ctx context.Context, base Base) (*Guard, context.Context) {
	g := &Guard{}
	g.ctx.carries, g.ctx.base = true, base
	composed := traceKey == nil || httptrace.ContextClientTrace(ctx) != nil
	if base.Direct && !composed {
		g.ctx.hooks = hooksPool.Get().(*hooks)
		g.ctx.hooks.g = g
	} else {
		g.ctx.own.GetConn = func(string) { g.set(guardAsked, true) }
		g.ctx.own.GotConn = func(info httptrace.GotConnInfo) { g.Obtained(info.Conn) }
	}
	if composed {
		// The caller's trace is composed with the guard's, as
		// httptrace does it.
		ctx, g.ctx.carries = httptrace.WithClientTrace(ctx, g.ctx.trace()), false
	}
	g.ctx.Init(ctx)
	return g, &g.ctx
}

// Returned is told that the base's RoundTrip of the attempt has returned:
// pooled hooks go back to their pool, no hook being able to run any more,
// and the context no longer answers for them.
func (g *Guard) Returned() {
	if g == nil || g.ctx.hooks == nil || g.ctx.pooled.Load() {
		return
	}
	// The hooks stay pointed at, never to be looked up again: net/http
	// looks its trace up once, as RoundTrip starts.
	g.ctx.pooled.Store(true)
	h := g.ctx.hooks
	h.g = nil
	hooksPool.Put(h)
}

// Request returns the attempt's request: a copy of req under ctx, held by
// g when there is a guard.
func (g *Guard) Request(req *http.Request, ctx context.Context) *http.Request {
	if g == nil {
		return req.WithContext(ctx)
	}
	g.req = *req.WithContext(ctx)
	return &g.req
}

// Wrap returns the attempt's response body, made to end the attempt's
// context when the caller closes it.
func (g *Guard) Wrap(body io.ReadCloser) io.ReadCloser {
	if _, ok := body.(io.Writer); ok {
		return attempt.CancelBody(body, g.End)
	}
	g.held = body
	return (*guardBody)(g)
}

// guardBody is a guard as its attempt's response body: it ends the
// attempt's context when the body is closed.
type guardBody Guard

func (b *guardBody) Read(p []byte) (int, error) { return b.held.Read(p) }

func (b *guardBody) Close() error {
	err := b.held.Close()
	(*Guard)(b).End()
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
	c := &guardCtx{carries: true}
	c.Init(context.Background())
	if traceKey != nil && httptrace.ContextClientTrace(c) != &c.own {
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
// guard's trace, and cancelled by the guard: a cancelctx.Ctx, which makes
// its Done channel only once something asks for it, so that an attempt
// over a base that never asks allocates nothing for it, and one over a
// parent that can never be cancelled, the channel only.
type guardCtx struct {
	cancelctx.Ctx
	own     httptrace.ClientTrace // the guard's hooks, unless pooled
	hooks   *hooks                // the pooled hooks, if any
	pooled  atomic.Bool           // the pooled hooks went back to their pool
	carries bool                  // the context answers for trace itself; otherwise parent carries it
	base    Base
}

// trace returns the guard's hooks.
func (c *guardCtx) trace() *httptrace.ClientTrace {
	if c.hooks != nil {
		return &c.hooks.trace
	}
	return &c.own
}

func (c *guardCtx) Value(key any) any {
	if c.carries && key != nil && key == traceKey {
		if c.pooled.Load() {
			return nil
		}
		return c.trace()
	}
	return c.Ctx.Value(key)
}

// end cancels the context once the attempt is over. A context that nothing
// has asked to wait on is only marked cancelled: it is made cancelled if
// asked later.
func (c *guardCtx) end() { c.Cancel(context.Canceled) }

// ProvedUnsent reports whether the attempt provably never reached the
// server: a connection was asked for and none was obtained. Without
// evidence that the base reports through httptrace (a transport other than
// net/http's may not), it reports false. Call it only after the base's
// RoundTrip has returned.
func (g *Guard) ProvedUnsent() bool {
	return g != nil && g.is(guardAsked) && g.conns.Load() == 0
}

// Conns returns how many connections were obtained for the attempt's
// sends.
func (g *Guard) Conns() int32 { return g.conns.Load() }

// GotConn reports whether a connection was obtained for the attempt.
func (g *Guard) GotConn() bool {
	return g != nil && g.conns.Load() > 0
}

// StoppedResend reports whether the guard stopped a resend by the base.
func (g *Guard) StoppedResend() bool {
	return g != nil && g.is(guardStopped)
}

// End releases the attempt's context once its outcome is known and its
// response, if any, is no longer being read.
func (g *Guard) End() {
	if g != nil {
		g.ctx.end()
	}
}

// is reports whether every flag of f is set.
func (g *Guard) is(f uint32) bool { return g.flags.Load()&f == f }

// HTTP1 reports whether the last connection of the attempt came from
// net/http's HTTP/1 loop.
func (g *Guard) HTTP1() bool { return g.is(guardHTTP1) }

// TraceKey returns the context key under which net/http/httptrace keeps a
// request's trace (see traceKey), nil if it could not be learnt: a
// context of one's own may then answer for a trace without
// httptrace.WithClientTrace.
func TraceKey() any { return traceKey }

// Fake returns a Guard in the state given, for tests of the decisions
// that read one: whether the base asked for a connection, how many it
// obtained, whether a resend was stopped. Its context is never used.
func Fake(asked bool, conns int32, stopped bool) *Guard {
	g := &Guard{}
	g.set(guardAsked, asked)
	g.conns.Store(conns)
	g.set(guardStopped, stopped)
	return g
}
