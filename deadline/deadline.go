package deadline

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/retryhttp/retryhttp/internal/deadlinefmt"
	"github.com/retryhttp/retryhttp/internal/wire"
)

// A Format is a request header that carries the time its caller has left
// before it stops waiting for the answer, relative to the moment the
// request is sent, so that the clocks of client and server need not agree.
// Its name says how the time is written: GRPCTimeout, EnvoyTimeout and
// ConnectTimeout are the headers of gRPC, Envoy and Connect, and
// Milliseconds names a header of your own in milliseconds.
// retryhttp.WithDeadlineHeader sends the formats on each attempt;
// server.Deadline reads them on a service's incoming requests.
type Format string

// The deadline headers other systems send and read.
const (
	// GRPCTimeout is gRPC's grpc-timeout: at most 8 digits and a unit, H
	// (hours), M (minutes), S (seconds), m (milliseconds), u (microseconds)
	// or n (nanoseconds), as "250m". Sent, the time is in the largest unit
	// that holds it exactly in 8 digits, or else in the smallest unit that
	// holds it in 8 digits, rounded up, as gRPC rounds it. Read, 0 ("0n",
	// which gRPC sends once its deadline has passed) is a deadline already
	// past.
	GRPCTimeout Format = "Grpc-Timeout"
	// EnvoyTimeout is Envoy's x-envoy-expected-rq-timeout-ms, in
	// milliseconds, which Envoy sets on the requests it forwards and which
	// its router heeds with respect_expected_rq_timeout. Read, 0 is no
	// deadline, as Envoy means it.
	EnvoyTimeout Format = "X-Envoy-Expected-Rq-Timeout-Ms"
	// ConnectTimeout is the Connect protocol's Connect-Timeout-Ms, in
	// milliseconds.
	ConnectTimeout Format = "Connect-Timeout-Ms"
)

// Milliseconds returns the format of a header of the given name whose
// value is the time left in whole milliseconds, as "250". It panics if name
// is not a valid header name, or names gRPC's header, whose format is
// GRPCTimeout's.
func Milliseconds(name string) Format {
	f := Format(http.CanonicalHeaderKey(name))
	if name == "" || !wire.ValidHeaderName(name) || f == GRPCTimeout {
		panic("deadline: Milliseconds: invalid header name " + strconv.Quote(name))
	}
	return f
}

// Sent returns the time left before its deadline that the attempt whose
// request context is ctx carries in its deadline headers
// (retryhttp.WithDeadlineHeader), exact where a header rounds it, and
// whether it carries one. A RoundTripper under a Transport (in its base, as
// otelretry's spans are) reads it from each attempt's request.
func Sent(ctx context.Context) (time.Duration, bool) {
	return deadlinefmt.Sent(ctx)
}
