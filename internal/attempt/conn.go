package attempt

import (
	"errors"
	"net"
	"net/netip"
	"sync/atomic"
)

// ErrRetired is the error of a write on a connection the Transport retired.
var ErrRetired = errors.New("retryhttp: connection retired after a failed response")

// A Conn is a connection a base.Dialer made, which a Transport can retire
// once a failed response without a body has put it back in net/http's
// pool, before another request is sent down it. A response with a body
// needs none of this: closed unread, it closes its connection.
//
// state is twice the number of requests begun on the connection, plus one
// once the response to the last has begun to arrive, or -1 once retired.
// Over HTTP/1 a request's first write follows the previous response's
// reads, so a write while the count is odd begins a request.
type Conn struct {
	net.Conn
	state atomic.Int64
	// sent is how many bytes were written to the connection: a send of
	// the attempt whose trace saw it at Sent, and saw it no higher once
	// the send was over, wrote nothing.
	sent atomic.Int64
	// addrs are the addresses the host name resolved to when the Dialer
	// resolved it, nil when the underlying dialer did.
	addrs []netip.Addr
}

// NewConn wraps the result of a dial to one of addrs.
func NewConn(c net.Conn, err error, addrs []netip.Addr) (net.Conn, error) {
	if err != nil {
		return nil, err
	}
	dc := &Conn{Conn: c, addrs: addrs}
	dc.state.Store(1)
	return dc, nil
}

// NetConn returns the connection c wraps.
func (c *Conn) NetConn() net.Conn { return c.Conn }

// CloseWrite shuts down the writing side of the connection c wraps, when it
// can, as net/http's body of a 101 Switching Protocols response offers.
func (c *Conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}

// State returns c's state, for Retire.
func (c *Conn) State() int64 { return c.state.Load() }

// Elsewhere reports whether the host c was dialled for has an address
// other than failed ones, and c's is one of them: a retry avoiding them
// may refuse c.
func (c *Conn) Elsewhere(failed []netip.AddrPort) bool {
	if !HasAddr(failed, AddrPortOf(c.RemoteAddr()).Addr()) {
		return false
	}
	for _, a := range c.addrs {
		if !HasAddr(failed, a.Unmap()) {
			return true
		}
	}
	return false
}

func (c *Conn) Write(p []byte) (int, error) {
	for {
		s := c.state.Load()
		if s < 0 {
			return 0, ErrRetired
		}
		if s&1 == 0 || c.state.CompareAndSwap(s, s+1) {
			n, err := c.Conn.Write(p)
			if n > 0 {
				c.sent.Add(int64(n))
			}
			return n, err
		}
	}
}

// Sent returns how many bytes were written to the connection.
func (c *Conn) Sent() int64 { return c.sent.Load() }

func (c *Conn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		if s := c.state.Load(); s >= 0 && s&1 == 0 {
			c.state.CompareAndSwap(s, s+1)
		}
	}
	return n, err
}

// Retire closes the connection if no request has begun on it since the
// one that began when its state was began, and reports whether it did. A
// request that took the connection from the pool meanwhile and has not
// written yet fails its first write with nothing sent, which net/http
// resends on another connection as it does when a server closes an idle
// connection.
func (c *Conn) Retire(began int64) bool {
	if began < 0 || began&1 == 0 {
		return false
	}
	for {
		s := c.state.Load()
		if s != began+1 && s != began+2 {
			return false
		}
		if c.state.CompareAndSwap(s, -1) {
			c.Conn.Close()
			return true
		}
	}
}

// Refuse retires an idle HTTP/1 connection that the request which just
// took it from the pool has not written on, and reports whether it did.
func (c *Conn) Refuse() bool {
	s := c.state.Load()
	if s < 0 || s&1 == 0 || !c.state.CompareAndSwap(s, -1) {
		return false
	}
	c.Conn.Close()
	return true
}
