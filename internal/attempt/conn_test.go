package attempt

import (
	"errors"
	"net"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestConnRetire proves that a connection is retired only while no
// request has begun on it since the failed one, and that a write after
// retirement fails with nothing sent.
func TestConnRetire(t *testing.T) {
	exchange := func(c net.Conn, peer net.Conn) {
		go func() {
			buf := make([]byte, 3)
			_, _ = peer.Read(buf)
			_, _ = peer.Write([]byte("res"))
		}()
		_, err := c.Write([]byte("req"))
		require.NoError(t, err)
		buf := make([]byte, 3)
		_, err = c.Read(buf)
		require.NoError(t, err)
	}
	t.Run("no request since", func(t *testing.T) {
		client, server := net.Pipe()
		defer server.Close()
		c, _ := NewConn(client, nil, nil)
		dc := c.(*Conn)
		exchange(dc, server) // an earlier request
		began := dc.State()
		exchange(dc, server) // the request that failed
		require.True(t, dc.Retire(began))
		n, err := dc.Write([]byte("next"))
		assert.Zero(t, n)
		assert.ErrorIs(t, err, ErrRetired)
	})
	t.Run("another request began", func(t *testing.T) {
		client, server := net.Pipe()
		defer server.Close()
		c, _ := NewConn(client, nil, nil)
		dc := c.(*Conn)
		defer dc.Close()
		began := dc.State()
		exchange(dc, server) // the request that failed
		exchange(dc, server) // another request, on the pooled connection
		assert.False(t, dc.Retire(began))
		exchange(dc, server) // the connection still works
	})
}

// fixedAddrConn is a net.Conn whose remote address is fixed.
type fixedAddrConn struct {
	net.Conn
	remote net.Addr
}

func (c fixedAddrConn) RemoteAddr() net.Addr { return c.remote }

func TestConnElsewhere(t *testing.T) {
	a1, a2 := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")
	conn := func(addrs []netip.Addr) *Conn {
		return &Conn{Conn: fixedAddrConn{remote: net.TCPAddrFromAddrPort(netip.AddrPortFrom(a1, 80))}, addrs: addrs}
	}
	failedA1 := []netip.AddrPort{netip.AddrPortFrom(a1, 80)}
	assert.True(t, conn([]netip.Addr{a1, a2}).Elsewhere(failedA1), "another address remains")
	assert.False(t, conn([]netip.Addr{a1}).Elsewhere(failedA1), "the only address")
	assert.False(t, conn(nil).Elsewhere(failedA1), "addresses unknown")
	assert.False(t, conn([]netip.Addr{a1, a2}).Elsewhere([]netip.AddrPort{netip.AddrPortFrom(a2, 80)}), "its address did not fail")
	assert.False(t, conn([]netip.Addr{a1, a2}).Elsewhere(append(failedA1, netip.AddrPortFrom(a2, 80))), "every address failed")
}

func TestConnCloseWrite(t *testing.T) {
	client, server := net.Pipe()
	defer server.Close()
	p, _ := NewConn(client, nil, nil)
	defer p.Close()
	assert.ErrorIs(t, p.(interface{ CloseWrite() error }).CloseWrite(), errors.ErrUnsupported)
}
