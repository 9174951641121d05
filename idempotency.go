package retryhttp

import (
	"errors"
	"net"
	"net/http"
	"syscall"

	"github.com/retryhttp/retryhttp/internal/conns"
	"github.com/retryhttp/retryhttp/internal/guard"
	"github.com/retryhttp/retryhttp/internal/wire"
)

// mayResend reports whether a request whose attempt ended in err (nil when a
// response arrived) may be sent again without risking a repeated side
// effect: its method is idempotent, it carries an idempotency key, or the
// attempt provably never reached the server. The proof is the attempt's
// guard seeing no connection obtained for it, or else a dial that failed;
// once a connection was obtained, only an HTTP/2 server's REFUSED_STREAM
// reset of the one send made (read from the error's type, never its text)
// proves that the request was not processed.
func mayResend(method string, h http.Header, err error, g *guard.Guard) bool {
	if wire.IdempotentMethod(method) || wire.HasIdempotencyKey(h) {
		return true
	}
	if err == nil || g.StoppedResend() {
		return false
	}
	if g.GotConn() {
		// A dial error now may be a resend's, after a send that reached
		// the server; and only the one send's refusal proves anything.
		return g.Conns() == 1 && wire.RefusedStream(err)
	}
	return g.ProvedUnsent() || neverSent(err) || wire.RefusedStream(err)
}

// neverSent reports whether err proves that no byte of the request reached
// the server: the connection was never established. A dial that failed
// (refused, unreachable, timed out, or its name lookup failed) has sent
// nothing, so even a POST may be retried after it. A TLS handshake failure is
// not a dial error in net/http, and is never retried anyway.
func neverSent(err error) bool {
	var opErr *net.OpError
	if errors.As(err, &opErr) && opErr.Op == "dial" {
		return true
	}
	// A refused connection cannot happen once a connection exists, and a
	// proxy that refused the CONNECT made none to the destination.
	return errors.Is(err, syscall.ECONNREFUSED) || conns.ProxyRefusal(err) != nil
}
