package retryhttp

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"net/http"
	"syscall"

	"github.com/retryhttp/retryhttp/internal/conns"
	"github.com/retryhttp/retryhttp/internal/guard"
	"github.com/retryhttp/retryhttp/internal/replay"
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

// newIdempotencyKey returns a random version 4 UUID, the form servers that
// honour Idempotency-Key most often expect.
func newIdempotencyKey() string {
	var u [16]byte
	_, _ = rand.Read(u[:]) // crypto/rand.Read never returns an error.
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	var s [36]byte
	hex.Encode(s[0:8], u[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], u[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], u[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], u[8:10])
	s[23] = '-'
	hex.Encode(s[24:36], u[10:16])
	return string(s[:])
}

// rewindBody returns a GetBody for a guarded attempt of a request whose
// body r replays and whose GetBody is getBody, for the resends of
// net/http's that the attempt's guard lets through, or nil when there is
// no body to give. A GetBody of http.NewRequest's is given as it is:
// whoever calls it, its body shares nothing with the one it replaces. Any
// other comes through rewindOnly, as does a body copied as it is sent.
func rewindBody(r *replay.Replay, getBody func() (io.ReadCloser, error)) func() (io.ReadCloser, error) {
	switch {
	case r.Source() != nil:
		return guard.RewindOnly(r.Source())
	case r.None() || getBody == nil:
		return nil
	case replay.FreshBodies(getBody):
		return getBody
	}
	return guard.RewindOnly(replay.GetBody(getBody))
}
