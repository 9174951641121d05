package evidence

import (
	"net/http/httptrace"
	"net/netip"
	"sync/atomic"

	"github.com/retryhttp/retryhttp/internal/attempt"

	"github.com/retryhttp/retryhttp/internal/guard"
)

// An attempt is one request the Transport hands to its base, but the base
// may write it more than once: net/http sends a request again by itself
// when the connection it wrote it to fails before any byte of a response
// (a reused HTTP/1 connection that the server closed, for a request it
// calls replayable; an HTTP/2 stream refused, or a GOAWAY). The server may
// have received each of those sends, so the counts the Transport reports
// (Attempts, Error.Attempts, the hooks, the log) count them, as a packet
// capture would.
//
// A Trace counts them through net/http/httptrace, which an
// *http.Transport calls for each send: GotConn, on the goroutine of
// RoundTrip, when the send obtains its connection, and WroteRequest, on
// the connection's goroutine, once the request is written. A send is
// written when WroteRequest reports no error, or, over HTTP/2, when it is
// called at all (the header block went out, and the body was cut short). A
// written send that another send of the attempt follows was sent again:
// net/http's loops obtain the next connection only once the send before
// has failed and its write has ended (HTTP/1 waits for the connection's
// write loop, HTTP/2 for the stream's), so the flag read at the next
// GotConn is the previous send's. The attempt's last send is the attempt
// itself, counted as it always was, written or not.
//
// Not counted, whatever WroteRequest said (over HTTP/1 it reports the
// request written to net/http's buffer, before the buffer is flushed):
//
//   - a send on a pooled connection the trace refused (Trace.gotConn),
//     closed before the write;
//   - a send on a connection a Dialer made that took no byte of it: one
//     the Transport retired (Trace.retire) after a failed response
//     that net/http had pooled, or one found closed, whose write fails at
//     once;
//   - for a guarded attempt, a send of net/http's HTTP/1 loop that another
//     follows: net/http sends a request it does not call replayable again
//     only when nothing of it reached the connection;
//   - the send before one the guard stopped: it is the attempt's own.
//
// A request written to a connection the server had just closed, whose
// bytes its kernel discarded, counts: no client can tell it from one the
// server read and dropped. So does, on a connection no Dialer made, an
// HTTP/1 send that net/http buffered whole and then failed to write (the
// connection was found closed): only a base.Dialer's connections show what
// reached them.
type sendCount struct {
	g    *guard.Guard  // the attempt's guard, if it has one
	send atomic.Uint32 // the current send: sendWritten, sendVoid
	// resentLast reports, under the Trace's lock, that the last
	// GotConn found the send before it written, and resent holds the
	// remote addresses of the connections of sends written and then sent
	// again.
	resentLast bool
	// carries is set when the Trace answers for its trace itself,
	// rather than through a context of httptrace's (kept here, where it
	// costs no padding).
	carries bool
	resent  []netip.AddrPort
	sentAt  int64 // under the lock: the bytes written to dc when the send got it
}

// The flags of the current send.
const (
	sendWritten = 1 << iota // WroteRequest reported the request written
	sendVoid                // the connection was refused: nothing is written
)

// sendBegins records that the base obtained a connection for a send of
// the attempt, at GotConn: a send before it that was written was sent
// again.
func (p *Trace) sendBegins() {
	prev := p.send.Swap(0)
	p.mu.Lock()
	defer p.mu.Unlock()
	// The guard's flags are still the previous send's: this trace's
	// hooks are called before those of the trace it is composed with.
	p.resentLast = prev&sendWritten != 0 && (p.g == nil || !p.g.HTTP1()) &&
		(p.dc == nil || p.dc.Sent() > p.sentAt)
	if !p.resentLast {
		return
	}
	var peer netip.AddrPort
	if p.conn != nil {
		peer = attempt.AddrPortOf(p.conn.RemoteAddr())
	}
	p.resent = append(p.resent, peer)
}

// sendRefused marks the current send as one that writes nothing: its
// connection was closed before the write.
func (p *Trace) sendRefused() { p.send.Store(sendVoid) }

// http2WroteRequest is the function of net/http's HTTP/2 client that calls
// WroteRequest. It calls it only once the request's header block is
// written: with an error when the body was not written whole.
const http2WroteRequest = "net/http.http2traceWroteRequest"

// wroteRequest is the trace's WroteRequest. A send is written when all of
// it was; over HTTP/2, also when its header block was, and its body was cut
// short: the stream was refused or reset while the body was going out. The
// caller is read from the stack only after such an error.
func (p *Trace) wroteRequest(info httptrace.WroteRequestInfo) {
	if info.Err == nil || guard.HookCaller() == http2WroteRequest {
		p.send.CompareAndSwap(0, sendWritten)
	}
	if p.late.Load() {
		p.Settle() // as wroteHeaders does for a turn admit gave
	}
}

// Resends returns the remote addresses of the connections of the sends
// the base wrote and then sent again, in order, once the base's RoundTrip
// has returned; nil for an attempt without a trace.
func (p *Trace) Resends() []netip.AddrPort {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.resent
	if p.resentLast && p.g.StoppedResend() {
		// The guard stopped the send that followed the last one: that
		// one is the attempt's own.
		r = r[:len(r)-1]
	}
	return r
}
