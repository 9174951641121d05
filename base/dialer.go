package base

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"time"

	"github.com/retryhttp/retryhttp/internal/attempt"
)

// A Dialer connects to a host name's addresses one after another in the
// order its resolver returns them, as net.Dialer does, except for the
// connection of a retry: the addresses at which the request's earlier
// attempts failed, and left their connection, are dialled last, so that a
// retry reaches another instance of the service first (a host name with
// several addresses: DNS round robin, a headless Kubernetes Service). It
// is what a Transport's default base dials with; give it to an
// *http.Transport of your own in one line:
//
//	t.DialContext = base.NewDialer().DialContext
//
// A Transport learns where each attempt went through net/http/httptrace
// when its base is an *http.Transport, so this works when that transport,
// given with retryhttp.WithBase, dials with the Dialer.
//
// Besides, a retry refuses a pooled HTTP/1 connection to such an address,
// while another address remains, and a failed response without a body,
// which net/http pools before the Transport sees it, costs its connection
// as one with a body does when the retry leaves it. For the first, the
// Dialer must know the name's addresses: it resolves the name itself for a
// retry, and for every dial when Resolver is set; with a nil Resolver a
// first attempt is dialled by name through Dialer (a net.Dialer's Happy
// Eyeballs included), and its connection is not refused.
//
// The connections it returns wrap those of Dialer: they have a NetConn
// method, as *tls.Conn has, that returns the underlying connection.
//
// A Dialer is safe for concurrent use; its fields must not change once it
// is in use.
type Dialer struct {
	// Resolver looks up the host's addresses, for every dial when set, and
	// for a retry's dial when nil, through net.DefaultResolver.
	Resolver interface {
		LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
	}
	// Dialer dials each address, an "ip:port". Nil means a net.Dialer with
	// a 30 s timeout and 30 s keep-alives, go-cleanhttp's.
	Dialer interface {
		DialContext(ctx context.Context, network, address string) (net.Conn, error)
	}
}

// NewDialer returns a Dialer with a nil Resolver and a net.Dialer with
// go-cleanhttp's timeouts: a first attempt's dial is the net.Dialer's own.
func NewDialer() *Dialer { return &Dialer{} }

// resolver and contextDialer are the methods a Dialer uses of its Resolver
// and Dialer.
type (
	resolver interface {
		LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
	}
	contextDialer interface {
		DialContext(ctx context.Context, network, address string) (net.Conn, error)
	}
)

// defaultNetDialer is the net.Dialer of a Dialer without one, with
// go-cleanhttp's settings.
var defaultNetDialer = &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}

// DialContext connects to address, a "host:port", on network. When host is
// a name, its addresses are dialled in the resolver's order, those at which
// an earlier attempt of the request being sent failed moved to the end, and
// the first connection made is returned; when every address fails, the
// errors are joined. A literal IP address is dialled as it is.
func (d *Dialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	dial := d.Dialer
	if dial == nil {
		dial = defaultNetDialer
	}
	failed := attempt.Failed(ctx)
	if d.Resolver == nil && len(failed) == 0 {
		// Nothing to avoid: the dialer's own way, Happy Eyeballs included.
		c, err := dial.DialContext(ctx, network, address)
		return attempt.NewConn(c, err, nil)
	}
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	if _, err := netip.ParseAddr(host); err == nil {
		c, err := dial.DialContext(ctx, network, address)
		return attempt.NewConn(c, err, nil)
	}
	var r resolver = net.DefaultResolver
	if d.Resolver != nil {
		r = d.Resolver
	}
	ipNet := "ip"
	switch network {
	case "tcp4", "udp4":
		ipNet = "ip4"
	case "tcp6", "udp6":
		ipNet = "ip6"
	}
	addrs, err := r.LookupNetIP(ctx, ipNet, host)
	if err != nil {
		return nil, err
	}
	if len(addrs) == 0 {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	addrs = avoidFailed(addrs, failed)
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(dialTimeout(dial))
	}
	var errs []error
	for i, a := range addrs {
		// Each address gets its share of the time left, as net.Dialer
		// gives it, so that one that swallows packets cannot use it all.
		actx, cancel := context.WithDeadline(ctx, partialDeadline(time.Now(), deadline, len(addrs)-i))
		c, err := dial.DialContext(actx, network, net.JoinHostPort(a.Unmap().String(), port))
		cancel()
		if err == nil {
			return attempt.NewConn(c, nil, addrs)
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, errors.Join(errs...)
}

// dialTimeout is how long dial may take over all addresses: a net.Dialer's
// Timeout, or 30 s.
func dialTimeout(dial contextDialer) time.Duration {
	if nd, ok := dial.(*net.Dialer); ok && nd.Timeout > 0 {
		return nd.Timeout
	}
	return defaultNetDialer.Timeout
}

// minDialShare is the least time an address gets when others remain, as
// in net.Dialer.
const minDialShare = 2 * time.Second

// partialDeadline returns the deadline of one of left addresses still to
// dial before deadline: an equal share of the time left, at least
// minDialShare unless that passes deadline.
func partialDeadline(now, deadline time.Time, left int) time.Time {
	share := deadline.Sub(now) / time.Duration(left)
	if share < minDialShare {
		share = minDialShare
	}
	if d := now.Add(share); d.Before(deadline) {
		return d
	}
	return deadline
}

// avoidFailed returns addrs with those in failed moved to the end, each
// group in its order. addrs is not modified.
func avoidFailed(addrs []netip.Addr, failed []netip.AddrPort) []netip.Addr {
	if len(failed) == 0 {
		return addrs
	}
	good := make([]netip.Addr, 0, len(addrs))
	var bad []netip.Addr
	for _, a := range addrs {
		if attempt.HasAddr(failed, a.Unmap()) {
			bad = append(bad, a)
		} else {
			good = append(good, a)
		}
	}
	return append(good, bad...)
}
