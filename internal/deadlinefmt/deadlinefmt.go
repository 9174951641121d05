// Package deadlinefmt writes and reads the values of deadline headers, for
// the Transport that sends them and the server Handler that reads them, and
// carries in an attempt's context the time left its headers say, for
// deadline.Sent. A format is named by its header: deadline.Format's
// constants, or a header of the caller's own in milliseconds.
package deadlinefmt

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/retryhttp/retryhttp/internal/wire"
)

// The headers whose format is not a plain number of milliseconds, as
// deadline.GRPCTimeout and deadline.EnvoyTimeout name them.
const (
	GRPC  = "Grpc-Timeout"
	Envoy = "X-Envoy-Expected-Rq-Timeout-Ms"
)

// Check returns formats with their names in canonical form, and panics,
// naming fn ("retryhttp: WithDeadlineHeader"), if there is none or one is
// not a valid header name.
func Check[F ~string](fn string, formats []F) []F {
	if len(formats) == 0 {
		panic(fn + ": no deadline.Format")
	}
	out := make([]F, 0, len(formats))
	for _, f := range formats {
		if f == "" || !wire.ValidHeaderName(string(f)) {
			panic(fn + ": invalid header name " + strconv.Quote(string(f)))
		}
		out = append(out, F(http.CanonicalHeaderKey(string(f))))
	}
	return out
}

// grpcMaxValue is the largest value grpc-timeout's 8 digits hold.
const grpcMaxValue = 99_999_999

// msMaxDigits bounds a value in milliseconds, as Connect's grammar does: 10
// digits are 115 days, past any deadline worth carrying, and cannot
// overflow a time.Duration. A longer time left is sent as msMaxValue, which
// every reader of the format accepts: a deadline that far away bounds
// nothing the callee does.
const (
	msMaxDigits = 10
	msMaxValue  = 9_999_999_999
)

// grpcUnits are grpc-timeout's units, the largest first.
var grpcUnits = [...]struct {
	unit time.Duration
	sign byte
}{
	{time.Hour, 'H'}, {time.Minute, 'M'}, {time.Second, 'S'},
	{time.Millisecond, 'm'}, {time.Microsecond, 'u'}, {time.Nanosecond, 'n'},
}

// Append appends d, a positive time left, in the format of the header
// format, a canonical name: for GRPC as appendGRPCTimeout does, for the
// others in whole milliseconds, rounded down, so that a layer below is
// never told of time its caller does not have, and at most msMaxValue, 10
// digits.
func Append(b []byte, format string, d time.Duration) []byte {
	if format == GRPC {
		return appendGRPCTimeout(b, d)
	}
	return strconv.AppendInt(b, min(int64(d/time.Millisecond), msMaxValue), 10)
}

// appendGRPCTimeout appends d, positive, as grpc-timeout: in the largest
// unit that holds it exactly in 8 digits, or else in the smallest unit that
// holds it in 8 digits, rounded up.
func appendGRPCTimeout(b []byte, d time.Duration) []byte {
	for _, u := range grpcUnits {
		if d%u.unit == 0 && d/u.unit <= grpcMaxValue {
			return append(strconv.AppendInt(b, int64(d/u.unit), 10), u.sign)
		}
	}
	for i := len(grpcUnits) - 1; i >= 0; i-- {
		u := grpcUnits[i]
		if n := (d-1)/u.unit + 1; n <= grpcMaxValue {
			return append(strconv.AppendInt(b, int64(n), 10), u.sign)
		}
	}
	// Unreachable: the longest time.Duration is about 2.6 million hours.
	return append(b, "99999999H"...)
}

// A Kind is what one header value says of a request's deadline.
type Kind int

const (
	Malformed Kind = iota // not a value of the format
	None                  // a valid value that sets no deadline
	Set                   // the time left, possibly 0
)

// Parse reads one value of a header in the format of the header format, a
// canonical name: the time left, or None, or Malformed. Spaces and tabs
// around the value are ignored, as HTTP ignores them around a field value;
// anything else that is not the format (a sign, a fraction, spaces inside,
// a missing or unknown unit, a list) makes the value malformed.
func Parse(format, s string) (time.Duration, Kind) {
	s = wire.TrimOWS(s)
	if format == GRPC {
		return parseGRPCTimeout(s)
	}
	n, ok := wire.Digits(s)
	switch {
	case !ok || len(s) > msMaxDigits:
		return 0, Malformed
	case n > 0:
		return time.Duration(n) * time.Millisecond, Set
	case format == Envoy:
		return 0, None // Envoy's 0 is no timeout
	default:
		return 0, Malformed // Connect asks for a positive number; so do we
	}
}

// parseGRPCTimeout reads a grpc-timeout value without surrounding spaces.
// A value too long for a time.Duration (more than 2.5 million hours) is
// the longest time.Duration, as gRPC reads it.
func parseGRPCTimeout(s string) (time.Duration, Kind) {
	if len(s) < 2 {
		return 0, Malformed
	}
	n, ok := wire.Digits(s[:len(s)-1])
	if !ok || len(s) > 9 {
		return 0, Malformed
	}
	for _, u := range grpcUnits {
		if s[len(s)-1] == u.sign {
			return wire.Units(n, u.unit), Set
		}
	}
	return 0, Malformed
}

// A SentContext is an attempt's context that carries the time left its
// deadline headers say, for a server.Handler in the same process to read
// (Sent). It may live in a struct of its caller's (Set), or be made by
// WithSent.
type SentContext struct {
	context.Context
	left time.Duration
}

type sentKey struct{}

// Set makes c ctx, carrying left.
func (c *SentContext) Set(ctx context.Context, left time.Duration) {
	c.Context, c.left = ctx, left
}

func (c *SentContext) Value(key any) any {
	if key == (sentKey{}) {
		return c
	}
	return c.Context.Value(key)
}

// WithSent returns ctx, of an attempt whose deadline headers say left,
// carrying left for Sent.
func WithSent(ctx context.Context, left time.Duration) context.Context {
	return &SentContext{Context: ctx, left: left}
}

// Sent returns the time left that WithSent put in ctx, and whether there
// is one.
func Sent(ctx context.Context) (time.Duration, bool) {
	c, ok := ctx.Value(sentKey{}).(*SentContext)
	if !ok {
		return 0, false
	}
	return c.left, true
}
