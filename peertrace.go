package retryhttp

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/netip"
	"sync"

	"github.com/retryhttp/retryhttp/internal/attempt"
)

// multiplexed reports whether c speaks HTTP/2, whose requests share it.
func multiplexed(c net.Conn) bool {
	tc, ok := c.(*tls.Conn)
	return ok && tc.ConnectionState().NegotiatedProtocol == "h2"
}

// A peerTrace records which connection carried one attempt, through
// net/http/httptrace's GotConn, which an *http.Transport calls on the
// goroutine of RoundTrip, and counts the sends of the attempt that the
// base made again on its own (see sends.go). The lock covers bases that
// call GotConn from another goroutine. It is also the attempt's context,
// so that base.Peer finds it, and net/http its trace, without a context of
// its own.
type peerTrace struct {
	context.Context
	mu     sync.Mutex
	conn   net.Conn
	dc     *attempt.Conn    // the connection, when a base.Dialer made it
	began  int64            // dc's state when the attempt got it
	refuse []netip.AddrPort // where earlier attempts failed: pooled connections there are refused
	trace  httptrace.ClientTrace
	sendCount
}

// tracePeer returns a copy of a whose context records the connection that
// carries it, composed with any trace the caller set, and counts the sends
// the base makes again; g is the attempt's guard, nil if it has none. A
// pooled HTTP/1 connection that a base.Dialer made to an address in refuse
// is retired as the attempt gets it, before anything is written: net/http
// then sends the attempt on another connection, as it does when a server
// closed an idle one, so that a retry does not meet an instance that
// failed the request through another connection to it. The caller passes
// refuse only for attempts that net/http may resend by itself: without a
// body, or with GetBody, and not guarded.
func tracePeer(a *http.Request, refuse []netip.AddrPort, g *guard) (*http.Request, *peerTrace) {
	p := &peerTrace{Context: a.Context(), refuse: refuse}
	p.g = g
	if traceKey == nil {
		p.trace.GotConn, p.trace.WroteRequest = p.gotConn, p.wroteRequest
		return a.WithContext(httptrace.WithClientTrace(p, &p.trace)), p
	}
	// The context answers for the trace itself, composed with the one
	// already there (the guard's, the caller's) as httptrace composes
	// them, this one's hooks first, without a context or reflection.
	p.carries = true
	old := httptrace.ContextClientTrace(p.Context)
	if old == nil {
		p.trace.GotConn, p.trace.WroteRequest = p.gotConn, p.wroteRequest
		return a.WithContext(p), p
	}
	p.trace = *old
	if gotConn := old.GotConn; gotConn != nil {
		p.trace.GotConn = func(info httptrace.GotConnInfo) {
			p.gotConn(info)
			gotConn(info)
		}
	} else {
		p.trace.GotConn = p.gotConn
	}
	if wrote := old.WroteRequest; wrote != nil {
		p.trace.WroteRequest = func(info httptrace.WroteRequestInfo) {
			p.wroteRequest(info)
			wrote(info)
		}
	} else {
		p.trace.WroteRequest = p.wroteRequest
	}
	return a.WithContext(p), p
}

// Value returns p for attempt.PeerKey, its trace for httptrace's key when
// it carries it, and the parent's values otherwise.
func (p *peerTrace) Value(key any) any {
	switch {
	case key == (attempt.PeerKey{}):
		return p
	case p.carries && key != nil && key == traceKey:
		return &p.trace
	}
	return p.Context.Value(key)
}

func (p *peerTrace) gotConn(info httptrace.GotConnInfo) {
	p.sendBegins()
	c := info.Conn
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	dc, _ := c.(*attempt.Conn)
	if dc != nil && info.Reused && len(p.refuse) > 0 && !multiplexed(info.Conn) &&
		dc.Elsewhere(p.refuse) && dc.Refuse() {
		p.sendRefused()
		return
	}
	p.mu.Lock()
	p.conn, p.dc = info.Conn, dc
	if dc != nil {
		p.began = dc.State()
		p.sentAt = dc.Sent()
	}
	p.mu.Unlock()
}

// multiplexed reports whether the attempt's connection speaks HTTP/2.
func (p *peerTrace) multiplexed() bool {
	if p == nil {
		return false
	}
	p.mu.Lock()
	c := p.conn
	p.mu.Unlock()
	return c != nil && multiplexed(c)
}

// retire closes the HTTP/1 connection that carried resp, a failure, when a
// base.Dialer made it and no other request has begun on it: a response
// without a body put it back in the pool before the Transport saw it.
func (p *peerTrace) retire(resp *http.Response) {
	if p == nil || resp.ProtoMajor != 1 {
		// Over HTTP/2 the connection carries other requests' streams.
		return
	}
	p.mu.Lock()
	dc, began := p.dc, p.began
	p.mu.Unlock()
	if dc != nil {
		dc.Retire(began)
	}
}

// Peer is peer, for base.Peer.
func (p *peerTrace) Peer() netip.AddrPort { return p.peer() }

// peer returns the remote address of the attempt's connection, the zero
// AddrPort when it is unknown: no connection was obtained, the base does
// not report through httptrace, or the connection is not over IP.
func (p *peerTrace) peer() netip.AddrPort {
	if p == nil {
		return netip.AddrPort{}
	}
	p.mu.Lock()
	c := p.conn
	p.mu.Unlock()
	if c == nil {
		return netip.AddrPort{}
	}
	return attempt.AddrPortOf(c.RemoteAddr())
}
