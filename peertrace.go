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
	"github.com/retryhttp/retryhttp/internal/wire"
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
	reused bool             // the connection carried a request before
	dc     *attempt.Conn    // the connection, when a base.Dialer made it
	began  int64            // dc's state when the attempt got it
	refuse []netip.AddrPort // where earlier attempts failed: pooled connections there are refused
	turn   bool             // the attempt holds its host's turn (connEvidence.admit)
	key    connKey          // the connection's, once connKey has read it
	keyed  bool
	trace  httptrace.ClientTrace
	sendCount

	ev  *connEvidence // the Transport's, nil when it has none
	req *http.Request // the attempt as sent, which GotConn may mark Close
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
// body, or with GetBody, and not guarded. The attempt reports its
// connection to ev, and holds its host's turn when turn is true.
func tracePeer(a *http.Request, refuse []netip.AddrPort, g *guard, ev *connEvidence, turn bool) (*http.Request, *peerTrace) {
	p := &peerTrace{Context: a.Context(), refuse: refuse, ev: ev, turn: turn}
	p.g = g
	if traceKey == nil {
		p.own()
		p.req = a.WithContext(httptrace.WithClientTrace(p, &p.trace))
		return p.req, p
	}
	// The context answers for the trace itself, composed with the one
	// already there (the guard's, the caller's) as httptrace composes
	// them, this one's hooks first, without a context or reflection.
	p.carries = true
	old := httptrace.ContextClientTrace(p.Context)
	if old == nil {
		p.own()
		p.req = a.WithContext(p)
		return p.req, p
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
	if turn {
		if wrote := old.WroteHeaders; wrote != nil {
			p.trace.WroteHeaders = func() {
				p.wroteHeaders()
				wrote()
			}
		} else {
			p.trace.WroteHeaders = p.wroteHeaders
		}
	}
	p.req = a.WithContext(p)
	return p.req, p
}

// own sets p's hooks in its own trace, with no other to compose.
func (p *peerTrace) own() {
	p.trace.GotConn, p.trace.WroteRequest = p.gotConn, p.wroteRequest
	if p.turn {
		p.trace.WroteHeaders = p.wroteHeaders
	}
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
	p.conn, p.dc, p.reused = info.Conn, dc, info.Reused
	if dc != nil {
		p.began = dc.State()
		p.sentAt = dc.Sent()
	}
	turn := p.turn
	p.mu.Unlock()
	if ev := p.ev; ev != nil && (turn || ev.pending.Load() > 0) {
		// net/http sends the request p traces, and reads its Close once
		// GotConn has returned, only when it has no body: with one, it
		// sends a copy.
		mark, over := ev.got(p, turn, p.req.Body == nil || p.req.Body == http.NoBody)
		if mark {
			p.req.Close = true
		}
		if over {
			p.mu.Lock()
			p.turn = false
			p.mu.Unlock()
		}
	}
}

// wroteHeaders passes on the turn of an attempt that holds its host's.
func (p *peerTrace) wroteHeaders() { p.settle() }

// settle passes on the turn of an attempt that holds its host's, once it
// has written its headers or ended.
func (p *peerTrace) settle() {
	if p == nil {
		return
	}
	p.mu.Lock()
	turn := p.turn
	p.turn = false
	p.mu.Unlock()
	if turn {
		p.ev.pass(p.host())
	}
}

// host returns the destination of the attempt.
func (p *peerTrace) host() wire.HostKey { return wire.RequestKey(p.req) }

// connKey returns the key of the attempt's connection; ok is false when
// no connection was obtained or its ends are not IP addresses.
func (p *peerTrace) connKey() (key connKey, ok bool) {
	if p == nil {
		return connKey{}, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conn == nil {
		return connKey{}, false
	}
	if !p.keyed {
		p.key = connKey{attempt.AddrPortOf(p.conn.LocalAddr()), attempt.AddrPortOf(p.conn.RemoteAddr())}
		p.keyed = true
	}
	return p.key, p.key.local.IsValid() && p.key.remote.IsValid()
}

// multiplexed reports whether the attempt's connection speaks HTTP/2.
func (p *peerTrace) multiplexed() bool {
	p.mu.Lock()
	c := p.conn
	p.mu.Unlock()
	return c != nil && multiplexed(c)
}

// elsewhere reports whether a base.Dialer made the attempt's connection,
// to remote, and knows its host an address that is neither remote nor in
// failing.
func (p *peerTrace) elsewhere(failing []netip.AddrPort, remote netip.AddrPort) bool {
	p.mu.Lock()
	dc := p.dc
	p.mu.Unlock()
	return dc != nil && dc.Elsewhere(append(failing[:len(failing):len(failing)], remote))
}

// wasReused reports whether the attempt's connection had carried a
// request before.
func (p *peerTrace) wasReused() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.reused
}

// retire closes the HTTP/1 connection that carried resp, a failure, when a
// base.Dialer made it and no other request has begun on it: a response
// without a body put it back in the pool before the Transport saw it. It
// reports whether it did.
func (p *peerTrace) retire(resp *http.Response) bool {
	if p == nil || resp.ProtoMajor != 1 {
		// Over HTTP/2 the connection carries other requests' streams.
		return false
	}
	p.mu.Lock()
	dc, began := p.dc, p.began
	p.mu.Unlock()
	return dc != nil && dc.Retire(began)
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
