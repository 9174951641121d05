package guard

import (
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"reflect"
	"runtime"
	"strings"
	"sync"

	"github.com/retryhttp/retryhttp/internal/replay"
	"github.com/retryhttp/retryhttp/internal/wire"
)

// This file holds what a guard needs to tell net/http's resends apart and
// to let through or stop each one; the reasoning is on the guard type.

// The functions of net/http that call a guard's hooks: GotConn, from the
// HTTP/1 connection loop (Transport.getConn) or from the HTTP/2 one
// (http2Transport.RoundTripOpt, through http2traceGotConn); GetBody, from
// the HTTP/1 rewind of a body after a send that wrote nothing (rewindBody)
// or from the HTTP/2 resend (http2shouldRetryRequest). net/http gives no
// other way to tell them apart; should it rename them, every second send
// is stopped, and no body is given.
const (
	HTTP1GetConn      = "net/http.(*Transport).getConn"
	HTTP2GotConn      = "net/http.http2traceGotConn"
	HTTP1RewindBody   = "net/http.rewindBody"
	HTTP2ResendGetter = "net/http.http2shouldRetryRequest"
)

// HookCaller returns the function that called the hook from which it is
// called, seen through the frames of httptrace's composition of traces and
// of this package. runtime.Callers gives a PC for each frame, inlined ones
// included, and FuncForPC names the innermost function there, which is that
// frame's; it reads 8 frames at a time and allocates nothing for frames
// that were not inlined, where CallersFrames would allocate for every call.
func HookCaller() string {
	var pcs [8]uintptr
	for skip := 2; skip < 64; skip += len(pcs) {
		n := runtime.Callers(skip, pcs[:])
		for _, pc := range pcs[:n] {
			f := runtime.FuncForPC(pc - 1)
			if f == nil {
				return ""
			}
			if name := f.Name(); !wrapperFrame(name) {
				return name
			}
		}
		if n < len(pcs) {
			break
		}
	}
	return ""
}

// wrapperFrame reports whether the function name is one between a hook and
// its caller: retryhttp's, its internal packages' (this one's among them),
// httptrace's composition of traces, reflect's and the runtime's.
func wrapperFrame(name string) bool {
	return strings.HasPrefix(name, "github.com/retryhttp/retryhttp.") || strings.HasPrefix(name, "github.com/retryhttp/retryhttp/internal/") || strings.HasPrefix(name, "net/http/httptrace.") ||
		strings.HasPrefix(name, "reflect.") || strings.HasPrefix(name, "runtime.")
}

// Obtained is the guard's GotConn: the base obtained conn for a send of the
// attempt. The loop that obtained the first connection over net/http's
// Transport is told by the connection (loopOf); any other is read from the
// stack.
func (g *Guard) Obtained(conn net.Conn) {
	from := ""
	if g.ctx.base.Direct && g.conns.Load() == 0 {
		from = loopOf(conn, g.ctx.base.H2C)
	}
	if from == "" {
		from = HookCaller()
	}
	g.obtainedFrom(from, conn)
}

// loopOf returns the loop of net/http's Transport that obtained conn, as
// the connection tells it: the HTTP/2 one for a *tls.Conn that negotiated
// "h2", the HTTP/1 one for any other *tls.Conn, and for a connection
// without TLS unless h2c, when net/http may speak HTTP/2 over it too and
// "" is returned. net/http hands a connection to its HTTP/2 loop only by
// the protocol its TLS handshake negotiated (Transport.dialConn), or, for
// unencrypted HTTP/2, by its Protocols.
func loopOf(conn net.Conn, h2c bool) string {
	if tc, ok := conn.(*tls.Conn); ok {
		if tc.ConnectionState().NegotiatedProtocol == "h2" {
			return HTTP2GotConn
		}
		return HTTP1GetConn
	}
	if h2c || conn == nil {
		return ""
	}
	return HTTP1GetConn
}

// obtainedFrom is obtained, called from the function from. A send after the
// first is let through when the guard can prove that the one before it
// wrote nothing or was not processed, and stopped otherwise, before it
// writes anything.
func (g *Guard) obtainedFrom(from string, conn net.Conn) {
	if g.conns.Add(1) > 1 && !g.provedResend(from, conn) {
		g.set(guardStopped, true)
		g.ctx.Cancel(ErrResendStopped)
		if from == HTTP1GetConn && conn != nil {
			// net/http's HTTP/1 write loop does not look at the context:
			// the connection, which carries nothing else, is closed
			// before the request is handed to it.
			conn.Close()
		}
	}
	g.set(guardHTTP1, from == HTTP1GetConn)
	g.set(guardHTTP2, from == HTTP2GotConn)
	if from == HTTP2GotConn {
		g.held = conn
	}
}

// provedResend reports whether a send on conn, obtained by the loop from,
// follows a send that provably wrote nothing or was not processed: one of
// net/http's HTTP/1 loop, or one of its HTTP/2 loop on the same connection.
func (g *Guard) provedResend(from string, conn net.Conn) bool {
	switch {
	case g.is(guardHTTP1):
		return from == HTTP1GetConn || from == HTTP2GotConn
	case g.is(guardHTTP2):
		return from == HTTP2GotConn && sameConn(g.held, conn)
	}
	return false
}

// sameConn reports whether a holds the connection c.
func sameConn(a io.ReadCloser, c net.Conn) bool {
	if a == nil || c == nil {
		return false
	}
	t := reflect.TypeOf(a)
	return t == reflect.TypeOf(c) && t.Comparable() && any(a) == any(c)
}

// Header reports whether a request whose header is h is guarded: once
// (its method is not idempotent and it is not declared resendable) and h
// has no idempotency key. It returns the header the request's attempts
// carry: h, or for a guarded request with a blank key, h with the key's
// entries moved to their lower-case names (see unreplayable).
func Header(h http.Header, once bool) (bool, http.Header) {
	if !once || wire.HasIdempotencyKey(h) {
		return false, h
	}
	return true, unreplayable(h)
}

// keyHeaders are the entries by which net/http's Request.isReplayable calls
// a POST replayable, whatever their value.
var keyHeaders = [...]string{"Idempotency-Key", "X-Idempotency-Key"}

// unreplayable returns h, or a copy of it whose Idempotency-Key and
// X-Idempotency-Key entries are moved to the lower-case names: net/http then
// does not call the request replayable, and writes the same field on the
// wire (a field name's case does not matter, RFC 9110, section 5.1; HTTP/2
// lower-cases every name anyway), so the server receives the blank key the
// caller sent.
func unreplayable(h http.Header) http.Header {
	moved := false
	for _, name := range keyHeaders {
		if vs, ok := h[name]; ok {
			if !moved {
				h, moved = h.Clone(), true
			}
			delete(h, name)
			lower := strings.ToLower(name)
			h[lower] = append(h[lower], vs...)
		}
	}
	return h
}

// RewindOnly returns a guarded attempt's GetBody for a body from src, which
// must not be asked for it while a base may still read the body it replaces.
// net/http's HTTP/1 Transport calls it only to resend what it did not write,
// once done with the last body: it gets a body from src. Its HTTP/2
// Transport calls it before it obtains a connection for a resend that the
// guard may yet stop: it gets a lazyBody, which asks src only when read.
// Any other caller gets ErrResendStopped.
func RewindOnly(src replay.Source) func() (io.ReadCloser, error) {
	return func() (io.ReadCloser, error) {
		switch HookCaller() {
		case HTTP1RewindBody:
			return src.Resend()
		case HTTP2ResendGetter:
			return &lazyBody{src: src}, nil
		}
		return nil, ErrResendStopped
	}
}

// A lazyBody is the body of a resend by net/http's HTTP/2 Transport. It
// asks its source for the bytes when first read, which net/http does only
// after it wrote the resend's header block: after the guard let the resend
// through, and after the send before it ended, with its body closed (net/
// http's RoundTrip waits for that when a stream fails). A resend the guard
// stops closes it unread, and the source is never asked.
type lazyBody struct {
	src    replay.Source
	mu     sync.Mutex
	body   io.ReadCloser // once opened
	err    error         // why it could not be opened
	closed bool
}

func (b *lazyBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	switch {
	case b.closed:
		b.mu.Unlock()
		return 0, replay.ErrBodyEnded
	case b.body == nil && b.err == nil:
		b.body, b.err = b.src.Resend()
	}
	body, err := b.body, b.err
	b.mu.Unlock()
	if err != nil {
		return 0, err
	}
	return body.Read(p)
}

func (b *lazyBody) Close() error {
	b.mu.Lock()
	body := b.body
	if b.closed {
		body = nil
	}
	b.closed = true
	b.mu.Unlock()
	if body != nil {
		return body.Close()
	}
	return nil
}
