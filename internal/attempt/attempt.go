// Package attempt is what a Transport tells the layers beneath it about
// each attempt it sends: in the attempt's context, its number, the
// addresses at which the request's earlier attempts failed, and the trace
// of the connection that carries it; and the connections a base.Dialer
// makes, which the Transport can retire. The root package sets these;
// package base reads them.
package attempt

import (
	"context"
	"net"
	"net/netip"
)

type numberKey struct{}

// WithNumber returns ctx carrying n, the number of the attempt whose
// context it is (2 for the first retry).
func WithNumber(ctx context.Context, n int) context.Context {
	return context.WithValue(ctx, numberKey{}, n)
}

// Number returns the attempt number ctx carries: 1 when it carries none,
// as a first attempt does.
func Number(ctx context.Context) int {
	if n, ok := ctx.Value(numberKey{}).(int); ok {
		return n
	}
	return 1
}

type failedKey struct{}

// WithFailed returns ctx, a retry's, carrying the peers at which the
// request's earlier attempts failed, for a base.Dialer.
func WithFailed(ctx context.Context, failed []netip.AddrPort) context.Context {
	return context.WithValue(ctx, failedKey{}, failed)
}

// Failed returns the peers at which the earlier attempts of the request
// whose context is ctx failed.
func Failed(ctx context.Context) []netip.AddrPort {
	p, _ := ctx.Value(failedKey{}).([]netip.AddrPort)
	return p
}

// PeerKey is the context key under which an attempt's context finds the
// trace of its connection, a value with a method Peer() netip.AddrPort.
type PeerKey struct{}

// Peer returns the remote address of the connection that carries the
// attempt whose context is ctx, the zero AddrPort when it is unknown.
func Peer(ctx context.Context) netip.AddrPort {
	p, ok := ctx.Value(PeerKey{}).(interface{ Peer() netip.AddrPort })
	if !ok {
		return netip.AddrPort{}
	}
	return p.Peer()
}

// HasAddr reports whether an entry of failed has the address a.
func HasAddr(failed []netip.AddrPort, a netip.Addr) bool {
	for _, f := range failed {
		if f.Addr() == a {
			return true
		}
	}
	return false
}

// AddrPortOf returns the IP address and port of a, the zero AddrPort when a
// is not an IP address.
func AddrPortOf(a net.Addr) netip.AddrPort {
	switch a := a.(type) {
	case *net.TCPAddr:
		ap := a.AddrPort()
		return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	case nil:
		return netip.AddrPort{}
	}
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		return netip.AddrPort{}
	}
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}
