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
// goroutine of RoundTrip. The lock covers bases that call it from another.
// It is also the attempt's context, so that base.Peer finds it without a
// context of its own.
type peerTrace struct {
	context.Context
	mu     sync.Mutex
	conn   net.Conn
	dc     *attempt.Conn    // the connection, when a base.Dialer made it
	began  int64            // dc's state when the attempt got it
	refuse []netip.AddrPort // where earlier attempts failed: pooled connections there are refused
	trace  httptrace.ClientTrace
}

// tracePeer returns a copy of a whose context records the connection that
// carries it, composed with any trace the caller set. A pooled HTTP/1
// connection that a base.Dialer made to an address in refuse is retired as
// the attempt gets it, before anything is written: net/http then sends the
// attempt on another connection, as it does when a server closed an idle
// one, so that a retry does not meet an instance that failed the request
// through another connection to it. The caller passes refuse only for
// attempts that net/http may resend by itself: without a body, or with
// GetBody, and not guarded.
func tracePeer(a *http.Request, refuse []netip.AddrPort) (*http.Request, *peerTrace) {
	p := &peerTrace{Context: a.Context(), refuse: refuse}
	p.trace.GotConn = p.gotConn
	return a.WithContext(httptrace.WithClientTrace(p, &p.trace)), p
}

// Value returns p for attempt.PeerKey, and the parent's values otherwise.
func (p *peerTrace) Value(key any) any {
	if key == (attempt.PeerKey{}) {
		return p
	}
	return p.Context.Value(key)
}

func (p *peerTrace) gotConn(info httptrace.GotConnInfo) {
	c := info.Conn
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	dc, _ := c.(*attempt.Conn)
	if dc != nil && info.Reused && len(p.refuse) > 0 && !multiplexed(info.Conn) &&
		dc.Elsewhere(p.refuse) && dc.Refuse() {
		return
	}
	p.mu.Lock()
	p.conn, p.dc = info.Conn, dc
	if dc != nil {
		p.began = dc.State()
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
