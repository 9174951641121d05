package base

import (
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAvoidFailed(t *testing.T) {
	a1, a2, a3 := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2"), netip.MustParseAddr("10.0.0.3")
	mapped := netip.AddrFrom16(a1.As16()) // 10.0.0.1 as an IPv4-mapped IPv6 address
	for _, tc := range []struct {
		name   string
		addrs  []netip.Addr
		failed []netip.AddrPort
		want   []netip.Addr
	}{
		{"nothing failed", []netip.Addr{a1, a2, a3}, nil, []netip.Addr{a1, a2, a3}},
		{"first failed", []netip.Addr{a1, a2, a3}, []netip.AddrPort{netip.AddrPortFrom(a1, 80)}, []netip.Addr{a2, a3, a1}},
		{"two failed keep their order", []netip.Addr{a1, a2, a3}, []netip.AddrPort{netip.AddrPortFrom(a2, 80), netip.AddrPortFrom(a1, 80)}, []netip.Addr{a3, a1, a2}},
		{"every one failed", []netip.Addr{a1, a2}, []netip.AddrPort{netip.AddrPortFrom(a1, 80), netip.AddrPortFrom(a2, 80)}, []netip.Addr{a1, a2}},
		{"mapped address", []netip.Addr{mapped, a2}, []netip.AddrPort{netip.AddrPortFrom(a1, 80)}, []netip.Addr{a2, mapped}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := append([]netip.Addr(nil), tc.addrs...)
			assert.Equal(t, tc.want, avoidFailed(tc.addrs, tc.failed))
			assert.Equal(t, in, tc.addrs, "the resolver's slice is not modified")
		})
	}
}

func TestPartialDeadline(t *testing.T) {
	now := time.Unix(1000, 0)
	for _, tc := range []struct {
		name     string
		deadline time.Duration
		left     int
		want     time.Duration
	}{
		{"one address gets it all", 30 * time.Second, 1, 30 * time.Second},
		{"an equal share", 30 * time.Second, 3, 10 * time.Second},
		{"at least the minimum", 3 * time.Second, 3, minDialShare},
		{"never past the deadline", time.Second, 3, time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := partialDeadline(now, now.Add(tc.deadline), tc.left)
			assert.Equal(t, tc.want, got.Sub(now))
		})
	}
}

func TestDialerConnUnwraps(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	c, err := NewDialer().DialContext(t.Context(), "tcp", ln.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	_, ok := c.(interface{ NetConn() net.Conn }).NetConn().(*net.TCPConn)
	assert.True(t, ok, "NetConn returns the TCP connection")
	assert.NoError(t, c.(interface{ CloseWrite() error }).CloseWrite())
}
