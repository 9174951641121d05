package retryhttp

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// A Dialer connects to a host name's addresses one after another in the
// order its resolver returns them, as net.Dialer does, except for the
// connection of a retry: the addresses at which the request's earlier
// attempts failed are dialled last, so that a retry reaches another
// instance of the service first (a host name with several addresses: DNS
// round robin, a headless Kubernetes Service). It is what the default base
// dials with; give it to an *http.Transport of your own in one line:
//
//	base.DialContext = retryhttp.NewDialer().DialContext
//
// A Transport learns where each attempt went through net/http/httptrace
// when its base is an *http.Transport, so this works when that transport,
// given with WithBase, dials with the Dialer.
//
// Besides, a retry refuses a pooled HTTP/1 connection to an address that
// failed the request, while another address remains, and a failed response
// without a body, which net/http pools before the Transport sees it, costs
// its connection as one with a body does. For the first, the Dialer must
// know the name's addresses: it resolves the name itself for a retry, and
// for every dial when Resolver is set; with a nil Resolver a first attempt
// is dialled by name through Dialer (a net.Dialer's Happy Eyeballs
// included), and its connection is not refused.
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
	failed := failedPeers(ctx)
	if d.Resolver == nil && len(failed) == 0 {
		// Nothing to avoid: the dialer's own way, Happy Eyeballs included.
		c, err := dial.DialContext(ctx, network, address)
		return newDialedConn(c, err, nil)
	}
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	if _, err := netip.ParseAddr(host); err == nil {
		c, err := dial.DialContext(ctx, network, address)
		return newDialedConn(c, err, nil)
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
			return newDialedConn(c, nil, addrs)
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
		if slicesContainsAddr(failed, a.Unmap()) {
			bad = append(bad, a)
		} else {
			good = append(good, a)
		}
	}
	return append(good, bad...)
}

// slicesContainsAddr reports whether an entry of failed has the address a.
func slicesContainsAddr(failed []netip.AddrPort, a netip.Addr) bool {
	for _, f := range failed {
		if f.Addr() == a {
			return true
		}
	}
	return false
}

// failedKey is the context key under which a retry carries the peers at
// which the request's earlier attempts failed, for a Dialer.
type failedKey struct{}

// failedPeers returns the peers at which the earlier attempts of the
// request whose context is ctx failed.
func failedPeers(ctx context.Context) []netip.AddrPort {
	p, _ := ctx.Value(failedKey{}).([]netip.AddrPort)
	return p
}

// errRetired is the error of a write on a connection the Transport retired.
var errRetired = errors.New("retryhttp: connection retired after a failed response")

// A dialedConn is a connection a Dialer made, which a Transport can retire
// once a failed response without a body has put it back in net/http's
// pool, before another request is sent down it. A response with a body
// needs none of this: closed unread, it closes its connection.
//
// state is twice the number of requests begun on the connection, plus one
// once the response to the last has begun to arrive, or -1 once retired.
// Over HTTP/1 a request's first write follows the previous response's
// reads, so a write while the count is odd begins a request.
type dialedConn struct {
	net.Conn
	state atomic.Int64
	// sent is how many bytes were written to the connection: a send of
	// the attempt whose trace saw it at sentAt, and saw it no higher once
	// the send was over, wrote nothing (see sends.go).
	sent atomic.Int64
	// addrs are the addresses the host name resolved to when the Dialer
	// resolved it, nil when the underlying dialer did.
	addrs []netip.Addr
}

// NetConn returns the connection c wraps.
func (c *dialedConn) NetConn() net.Conn { return c.Conn }

// CloseWrite shuts down the writing side of the connection c wraps, when it
// can, as net/http's body of a 101 Switching Protocols response offers.
func (c *dialedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}

// newDialedConn wraps the result of a dial to one of addrs.
func newDialedConn(c net.Conn, err error, addrs []netip.Addr) (net.Conn, error) {
	if err != nil {
		return nil, err
	}
	dc := &dialedConn{Conn: c, addrs: addrs}
	dc.state.Store(1)
	return dc, nil
}

// elsewhere reports whether the host c was dialled for has an address
// other than failed ones, and c's is one of them: a retry avoiding them
// may refuse c.
func (c *dialedConn) elsewhere(failed []netip.AddrPort) bool {
	if !slicesContainsAddr(failed, addrPortOf(c.RemoteAddr()).Addr()) {
		return false
	}
	for _, a := range c.addrs {
		if !slicesContainsAddr(failed, a.Unmap()) {
			return true
		}
	}
	return false
}

func (c *dialedConn) Write(p []byte) (int, error) {
	for {
		s := c.state.Load()
		if s < 0 {
			return 0, errRetired
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

func (c *dialedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		if s := c.state.Load(); s >= 0 && s&1 == 0 {
			c.state.CompareAndSwap(s, s+1)
		}
	}
	return n, err
}

// retire closes the connection if no request has begun on it since the
// one that began when its state was began, and reports whether it did. A
// request that took the connection from the pool meanwhile and has not
// written yet fails its first write with nothing sent, which net/http
// resends on another connection as it does when a server closes an idle
// connection.
func (c *dialedConn) retire(began int64) bool {
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

// refuse retires an idle HTTP/1 connection that the request which just
// took it from the pool has not written on, and reports whether it did.
func (c *dialedConn) refuse() bool {
	s := c.state.Load()
	if s < 0 || s&1 == 0 || !c.state.CompareAndSwap(s, -1) {
		return false
	}
	c.Conn.Close()
	return true
}

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
// so that PeerFromContext finds it, and net/http its trace, without a
// context of its own.
type peerTrace struct {
	context.Context
	mu     sync.Mutex
	conn   net.Conn
	dc     *dialedConn      // the connection, when a Dialer made it
	began  int64            // dc's state when the attempt got it
	refuse []netip.AddrPort // where earlier attempts failed: pooled connections there are refused
	trace  httptrace.ClientTrace
	sendCount
}

// tracePeer returns a copy of a whose context records the connection that
// carries it, composed with any trace the caller set, and counts the sends
// the base makes again; g is the attempt's guard, nil if it has none. A
// pooled HTTP/1 connection that a Dialer made to an address in refuse is
// retired as the attempt gets it, before anything is written: net/http
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

// peerKey is the context key under which an attempt's context finds its
// peerTrace.
type peerKey struct{}

// Value returns p for peerKey, its trace for httptrace's key when it
// carries it, and the parent's values otherwise.
func (p *peerTrace) Value(key any) any {
	switch {
	case key == (peerKey{}):
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
	dc, _ := c.(*dialedConn)
	if dc != nil && info.Reused && len(p.refuse) > 0 && !multiplexed(info.Conn) &&
		dc.elsewhere(p.refuse) && dc.refuse() {
		p.sendRefused()
		return
	}
	p.mu.Lock()
	p.conn, p.dc = info.Conn, dc
	if dc != nil {
		p.began = dc.state.Load()
		p.sentAt = dc.sent.Load()
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
// Dialer made it and no other request has begun on it: a response without
// a body put it back in the pool before the Transport saw it.
func (p *peerTrace) retire(resp *http.Response) {
	if p == nil || resp.ProtoMajor != 1 {
		// Over HTTP/2 the connection carries other requests' streams.
		return
	}
	p.mu.Lock()
	dc, began := p.dc, p.began
	p.mu.Unlock()
	if dc != nil {
		dc.retire(began)
	}
}

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
	return addrPortOf(c.RemoteAddr())
}

// addrPortOf returns the IP address and port of a, the zero AddrPort when a
// is not an IP address.
func addrPortOf(a net.Addr) netip.AddrPort {
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
