package evidence

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/retryhttp/retryhttp/internal/attempt"
	"github.com/retryhttp/retryhttp/internal/wire"

	"github.com/retryhttp/retryhttp/internal/guard"
)

// Multiplexed reports whether c speaks HTTP/2, whose requests share it.
func Multiplexed(c net.Conn) bool {
	tc, ok := c.(*tls.Conn)
	return ok && tc.ConnectionState().NegotiatedProtocol == "h2"
}

// A Trace records which connection carried one attempt, through
// net/http/httptrace's GotConn, which an *http.Transport calls on the
// goroutine of RoundTrip, and counts the sends of the attempt that the
// base made again on its own (see sends.go). The lock covers bases that
// call GotConn from another goroutine. It is also the attempt's context,
// so that base.Peer finds it, and net/http its trace, without a context of
// its own, and it holds the attempt's request: tracing an attempt costs
// one allocation.
//
// Its hooks are pooled (traceHooks) when its base is an *http.Transport
// itself, unless they must be composed with a trace already in the context
// (the caller's, a guard's).
type Trace struct {
	context.Context
	// tr is the trace net/http finds in the context: the pooled hooks'
	// until they go back to their pool (pooled), or the attempt's own,
	// composed with the trace already there.
	tr     *httptrace.ClientTrace
	pooled atomic.Bool
	hooks  *traceHooks // the pooled hooks, until end
	mu     sync.Mutex
	conn   net.Conn
	reused bool             // the connection carried a request before
	dc     *attempt.Conn    // the connection, when a base.Dialer made it
	began  int64            // dc's state when the attempt got it
	refuse []netip.AddrPort // where earlier attempts failed: pooled connections there are refused
	turn   bool             // the attempt holds its host's turn (Evidence.admit)
	late   atomic.Bool      // it took the turn for a send the base made again (getConn)
	// abandoned: its owner left it to answer, its outcome unwanted
	// (Abandon); abandon cancels it.
	abandoned atomic.Bool
	abandon   func()
	probe     bool   // it held the turn and got a new connection, on probation
	seq       uint64 // Evidence.seq when it got its connection
	sendCount

	ev  *Evidence     // the Transport's, nil when it has none
	req *http.Request // the attempt as sent: r, which GotConn may mark Close
	r   http.Request
}

// traceHooks are the hooks of one Trace at a time, reused through a
// pool so that tracing an attempt allocates none: each hook finds its
// Trace through p. They go back to the pool only once no hook of the
// attempt can run any more, which only an *http.Transport's own RoundTrip
// lets the Transport know (a wrapper may return while the round trip it
// started goes on): GetConn and GotConn run on the goroutine of RoundTrip, and
// WroteRequest, which may run on a connection's goroutine after RoundTrip
// returned, once per send that got a connection, so that a count of each
// tells. Hooks whose counts differ when RoundTrip returns are left to the
// garbage collector, still aimed at their attempt.
type traceHooks struct {
	plain httptrace.ClientTrace // GotConn and WroteRequest
	turn  httptrace.ClientTrace // also WroteHeaders, for an attempt that holds its host's turn
	p     *Trace                // set before the attempt is sent, read by the hooks only while it is theirs
	got   atomic.Int32          // GotConn calls
	wrote atomic.Int32          // WroteRequest calls returned
}

var hooksPool = sync.Pool{New: func() any { return newTraceHooks() }}

func newTraceHooks() *traceHooks {
	h := &traceHooks{}
	h.plain.GetConn = func(hostPort string) {
		h.p.getConn(hostPort)
	}
	h.plain.GotConn = func(info httptrace.GotConnInfo) {
		h.got.Add(1)
		h.p.gotConn(info)
	}
	h.plain.WroteRequest = func(info httptrace.WroteRequestInfo) {
		h.p.wroteRequest(info)
		h.wrote.Add(1)
	}
	h.turn = h.plain
	h.turn.WroteHeaders = func() {
		h.p.wroteHeaders()
	}
	return h
}

// NewTrace returns a copy of a whose context records the connection that
// carries it, composed with any trace the caller set, and counts the sends
// the base makes again; g is the attempt's guard, nil if it has none. A
// pooled HTTP/1 connection that a base.Dialer made to an address in refuse
// is retired as the attempt gets it, before anything is written: net/http
// then sends the attempt on another connection, as it does when a server
// closed an idle one, so that a retry does not meet an instance that
// failed the request through another connection to it. The caller passes
// refuse only for attempts that net/http may resend by itself: without a
// body, or with GetBody, and not guarded. The attempt reports its
// connection to ev, and holds its host's turn when turn is true. The
// caller calls end once the base's RoundTrip has returned.
func NewTrace(a *http.Request, refuse []netip.AddrPort, g *guard.Guard, ev *Evidence, turn bool) (*http.Request, *Trace) {
	p := &Trace{}
	return p.Begin(a, refuse, g, ev, turn), p
}

// Begin readies p, a zero Trace, as tracePeer does, and returns the
// attempt's request, which p holds.
func (p *Trace) Begin(a *http.Request, refuse []netip.AddrPort, g *guard.Guard, ev *Evidence, turn bool) *http.Request {
	p.Context, p.refuse, p.ev, p.turn = a.Context(), refuse, ev, turn
	p.g = g
	var old *httptrace.ClientTrace
	if guard.TraceKey() != nil {
		old = httptrace.ContextClientTrace(p.Context)
	}
	if old == nil && guard.TraceKey() != nil {
		// The context answers for the trace itself, with hooks from the
		// pool when the base is one that is done with them when its
		// RoundTrip returns (Evidence.direct), and of its own otherwise.
		p.carries = true
		var h *traceHooks
		if ev != nil && ev.direct {
			h = hooksPool.Get().(*traceHooks)
			p.hooks = h
		} else {
			h = newTraceHooks()
		}
		h.p = p
		if turn {
			p.tr = &h.turn
		} else {
			p.tr = &h.plain
		}
		p.r = *a.WithContext(p)
		p.req = &p.r
		return p.req
	}
	// Hooks of the attempt's own, composed with the trace already there
	// (the guard's, the caller's) as httptrace composes them, this one's
	// hooks first.
	tr := &httptrace.ClientTrace{}
	if old != nil {
		*tr = *old
	}
	if old != nil && old.GetConn != nil {
		getConn := old.GetConn
		tr.GetConn = func(hostPort string) {
			p.getConn(hostPort)
			getConn(hostPort)
		}
	} else {
		tr.GetConn = p.getConn
	}
	tr.GotConn = p.gotConn
	if old != nil && old.GotConn != nil {
		gotConn := old.GotConn
		tr.GotConn = func(info httptrace.GotConnInfo) {
			p.gotConn(info)
			gotConn(info)
		}
	}
	tr.WroteRequest = p.wroteRequest
	if old != nil && old.WroteRequest != nil {
		wrote := old.WroteRequest
		tr.WroteRequest = func(info httptrace.WroteRequestInfo) {
			p.wroteRequest(info)
			wrote(info)
		}
	}
	if turn {
		tr.WroteHeaders = p.wroteHeaders
		if old != nil && old.WroteHeaders != nil {
			wrote := old.WroteHeaders
			tr.WroteHeaders = func() {
				p.wroteHeaders()
				wrote()
			}
		}
	}
	if guard.TraceKey() == nil {
		p.r = *a.WithContext(httptrace.WithClientTrace(p, tr))
	} else {
		p.carries = true
		p.tr = tr
		p.r = *a.WithContext(p)
	}
	p.req = &p.r
	return p.req
}

// Hold stores a copy of a in p, a zero Trace that will not trace it, and
// returns it: a caller that holds a Trace in a struct of its own keeps an
// attempt's request in the same allocation, traced or not.
func (p *Trace) Hold(a *http.Request) *http.Request {
	p.r = *a
	return &p.r
}

// End gives the attempt's pooled hooks back once the base's RoundTrip has
// returned, unless a hook of the attempt may still run.
func (p *Trace) End() {
	if p == nil {
		return
	}
	if p.late.Load() {
		p.Settle()
	}
	if p.hooks == nil {
		return
	}
	h := p.hooks
	p.hooks = nil
	if h.got.Load() != h.wrote.Load() {
		return // a send's WroteRequest may come: the hooks stay the attempt's
	}
	p.pooled.Store(true)
	h.got.Store(0)
	h.wrote.Store(0)
	hooksPool.Put(h)
}

// AfterFunc is that of the attempt's context when it has one (a
// cancelctx.Ctx's), so that the context net/http's Transport derives from
// the attempt's for each request is tied to it as to a context of the
// context package, not by a goroutine of its own; otherwise it is
// context.AfterFunc's.
func (p *Trace) AfterFunc(f func()) (stop func() bool) {
	if a, ok := p.Context.(interface{ AfterFunc(func()) func() bool }); ok {
		return a.AfterFunc(f)
	}
	return context.AfterFunc(p.Context, f)
}

// Value returns p for attempt.PeerKey, its trace for httptrace's key when
// it carries it, and the parent's values otherwise.
func (p *Trace) Value(key any) any {
	switch {
	case key == (attempt.PeerKey{}):
		return p
	case p.carries && key != nil && key == guard.TraceKey():
		if !p.pooled.Load() {
			return p.tr
		}
	}
	return p.Context.Value(key)
}

func (p *Trace) gotConn(info httptrace.GotConnInfo) {
	if p.abandoned.Load() {
		p.stopResend(info.Conn)
		return
	}
	p.sendBegins()
	c := info.Conn
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	dc, _ := c.(*attempt.Conn)
	if dc != nil && info.Reused && len(p.refuse) > 0 && !Multiplexed(info.Conn) &&
		dc.Elsewhere(p.refuse) && dc.Refuse() {
		p.sendRefused()
		return
	}
	p.mu.Lock()
	p.conn, p.dc, p.reused = info.Conn, dc, info.Reused
	if p.ev != nil {
		p.seq = p.ev.seq.Add(1)
	}
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
func (p *Trace) wroteHeaders() { p.Settle() }

// Settle passes on the turn of an attempt that holds its host's, once it
// has written its headers or ended.
func (p *Trace) Settle() {
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
func (p *Trace) host() wire.HostKey { return wire.RequestKey(p.req) }

// connKey returns the key of the attempt's connection; ok is false when
// no connection was obtained or its ends are not IP addresses.
func (p *Trace) connKey() (key connKey, ok bool) {
	if p == nil {
		return connKey{}, false
	}
	p.mu.Lock()
	c := p.conn
	p.mu.Unlock()
	if c == nil {
		return connKey{}, false
	}
	key = connKey{attempt.AddrPortOf(c.LocalAddr()), attempt.AddrPortOf(c.RemoteAddr())}
	return key, key.local.IsValid() && key.remote.IsValid()
}

// multiplexed reports whether the attempt's connection speaks HTTP/2.
func (p *Trace) multiplexed() bool {
	p.mu.Lock()
	c := p.conn
	p.mu.Unlock()
	return c != nil && Multiplexed(c)
}

// elsewhere reports whether a base.Dialer made the attempt's connection,
// to remote, and knows its host an address that is neither remote nor in
// failing.
func (p *Trace) elsewhere(failing []netip.AddrPort, remote netip.AddrPort) bool {
	p.mu.Lock()
	dc := p.dc
	p.mu.Unlock()
	return dc != nil && dc.Elsewhere(append(failing[:len(failing):len(failing)], remote))
}

// gotSeq returns Evidence.seq as the attempt got its connection, 0
// when it got none or has no evidence table.
func (p *Trace) gotSeq() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seq
}

// probed reports whether the attempt held its host's turn and got a new
// connection, which is on probation until the attempt ends.
func (p *Trace) probed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.probe
}

// Written reports whether a send of the attempt was written whole to a
// connection (WroteRequest without an error, see sends.go), and so may
// have reached the server. An attempt cancelled while it dialled, or while
// it waited for a connection, or before its write ended, was not.
func (p *Trace) Written() bool {
	if p == nil {
		return false
	}
	if p.send.Load()&sendWritten != 0 {
		return true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.resent) > 0
}

// HoldsConn reports whether the attempt got a connection of its own, over
// HTTP/1: cancelling it before its answer would close that connection,
// where an HTTP/2 stream is reset alone, and a dial goes on for the pool.
func (p *Trace) HoldsConn() bool {
	if p == nil {
		return false
	}
	p.mu.Lock()
	c := p.conn
	p.mu.Unlock()
	return c != nil && !Multiplexed(c)
}

// Abandon marks the attempt, which got its connection, as left to answer while its outcome
// is not wanted, so that a send of it that net/http would make again
// (once its connection failed before an answer) is stopped before
// anything of it is written: cancel, which cancels the attempt, is called
// as that send looks for a connection, and a connection it gets all the
// same is closed before the write.
func (p *Trace) Abandon(cancel func()) {
	p.mu.Lock()
	p.abandon = cancel
	p.mu.Unlock()
	p.abandoned.Store(true)
}

// stopResend stops a send of an abandoned attempt: it cancels the attempt
// and closes c, the connection the send got, if any.
func (p *Trace) stopResend(c net.Conn) {
	p.mu.Lock()
	cancel := p.abandon
	p.mu.Unlock()
	cancel()
	if c != nil {
		c.Close()
	}
}

// wasReused reports whether the attempt's connection had carried a
// request before.
func (p *Trace) wasReused() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.reused
}

// retire closes the HTTP/1 connection that carried resp, a failure, when a
// base.Dialer made it and no other request has begun on it: a response
// without a body put it back in the pool before the Transport saw it. It
// reports whether it did.
func (p *Trace) retire(resp *http.Response) bool {
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
func (p *Trace) Peer() netip.AddrPort { return p.peer() }

// peer returns the remote address of the attempt's connection, the zero
// AddrPort when it is unknown: no connection was obtained, the base does
// not report through httptrace, or the connection is not over IP.
func (p *Trace) peer() netip.AddrPort {
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
