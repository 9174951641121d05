package base

import (
	"context"
	"net/netip"

	"github.com/retryhttp/retryhttp/internal/attempt"
)

// Attempt returns the number of the attempt whose request context is ctx:
// 1 for a first attempt, or for a context that did not come from a
// Transport, 2 for the first retry, and so on. A RoundTripper under a
// Transport reads it from each attempt's request; the OpenTelemetry
// attribute http.request.resend_count is the attempt number less one.
func Attempt(ctx context.Context) int {
	return attempt.Number(ctx)
}

// Peer returns the remote address of the connection that carries the
// attempt whose request context is ctx, once the base has obtained one,
// and otherwise the zero AddrPort. A RoundTripper under a Transport reads
// it when the attempt's RoundTrip returns. Attempts are traced only over an
// *http.Transport: every attempt when the Transport has a retry or give-up
// hook, or a logger that writes INFO or below, and otherwise the retries
// and the attempts to a host that failed lately, so that a success at a
// healthy host costs no trace.
func Peer(ctx context.Context) netip.AddrPort {
	return attempt.Peer(ctx)
}
