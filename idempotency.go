package retryhttp

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net"
	"net/http"
	"strings"
	"syscall"
)

// idempotentMethod reports whether RFC 9110 defines m as idempotent: sending
// the request twice has the same effect on the server as sending it once.
// The empty method means GET.
func idempotentMethod(m string) bool {
	switch m {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace,
		http.MethodPut, http.MethodDelete:
		return true
	}
	return false
}

// hasIdempotencyKey reports whether h names an idempotency key: a canonical
// Idempotency-Key or X-Idempotency-Key entry with a value that is not blank,
// or with no value at all. An entry whose value slice is empty is net/http's
// way (see http.Transport) to declare a request idempotent without sending
// the header, and stays such a declaration; a key that is empty or only
// spaces and tabs is sent on the wire, where no server can deduplicate on
// it, and counts as no key. An entry under another case of either name
// ("idempotency-key") is sent as the same field, and is a key when it holds
// a value that is not blank; net/http does not read it as a declaration.
func hasIdempotencyKey(h http.Header) bool {
	if keyIn(h, "Idempotency-Key") || keyIn(h, "X-Idempotency-Key") {
		return true
	}
	for k, vs := range h {
		if (strings.EqualFold(k, "Idempotency-Key") || strings.EqualFold(k, "X-Idempotency-Key")) && notBlank(vs) {
			return true
		}
	}
	return false
}

// keyIn reports whether h's entry name holds an idempotency key.
func keyIn(h http.Header, name string) bool {
	vs, ok := h[name]
	if !ok {
		return false
	}
	return len(vs) == 0 || notBlank(vs)
}

// notBlank reports whether one of vs is more than spaces and tabs.
func notBlank(vs []string) bool {
	for _, v := range vs {
		if trimOWS(v) != "" {
			return true
		}
	}
	return false
}

// mayResend reports whether a request whose attempt ended in err (nil when a
// response arrived) may be sent again without risking a repeated side
// effect: its method is idempotent, it carries an idempotency key, or the
// attempt provably never reached the server. The proof is the attempt's
// guard seeing no connection obtained for it, or else a dial that failed;
// once a connection was obtained, only an HTTP/2 server's REFUSED_STREAM
// reset of the one send made (read from the error's type, never its text)
// proves that the request was not processed.
func mayResend(method string, h http.Header, err error, g *guard) bool {
	if idempotentMethod(method) || hasIdempotencyKey(h) {
		return true
	}
	if err == nil || g.stoppedResend() {
		return false
	}
	if g.gotConn() {
		// A dial error now may be a resend's, after a send that reached
		// the server; and only the one send's refusal proves anything.
		return g.conns.Load() == 1 && refusedStream(err)
	}
	return g.provedUnsent() || neverSent(err) || refusedStream(err)
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
	return errors.Is(err, syscall.ECONNREFUSED) || proxyRefusal(err) != nil
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
