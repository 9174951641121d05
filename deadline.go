package retryhttp

import (
	"net/http"
	"strconv"
	"time"

	"github.com/retryhttp/retryhttp/internal/wire"
)

// A DeadlineFormat is a request header that carries the time its caller has
// left before it stops waiting for the answer, relative to the moment the
// request is sent, so that the clocks of client and server need not agree.
// Its name says how the time is written: GRPCTimeout, EnvoyTimeout and
// ConnectTimeout are the headers of gRPC, Envoy and Connect, and
// MillisecondsHeader names a header of your own in milliseconds.
// WithDeadlineHeader sends the formats on each attempt; HandlerDeadline
// reads them on a service's incoming requests.
type DeadlineFormat string

// The deadline headers other systems send and read.
const (
	// GRPCTimeout is gRPC's grpc-timeout: at most 8 digits and a unit, H
	// (hours), M (minutes), S (seconds), m (milliseconds), u (microseconds)
	// or n (nanoseconds), as "250m". Sent, the time is in the largest unit
	// that holds it exactly in 8 digits, or else in the smallest unit that
	// holds it in 8 digits, rounded up, as gRPC rounds it. Read, 0 ("0n",
	// which gRPC sends once its deadline has passed) is a deadline already
	// past.
	GRPCTimeout DeadlineFormat = "Grpc-Timeout"
	// EnvoyTimeout is Envoy's x-envoy-expected-rq-timeout-ms, in
	// milliseconds, which Envoy sets on the requests it forwards and which
	// its router heeds with respect_expected_rq_timeout. Read, 0 is no
	// deadline, as Envoy means it.
	EnvoyTimeout DeadlineFormat = "X-Envoy-Expected-Rq-Timeout-Ms"
	// ConnectTimeout is the Connect protocol's Connect-Timeout-Ms, in
	// milliseconds.
	ConnectTimeout DeadlineFormat = "Connect-Timeout-Ms"
)

// MillisecondsHeader returns the format of a header of the given name whose
// value is the time left in whole milliseconds, as "250". It panics if name
// is not a valid header name, or names gRPC's header, whose format is
// GRPCTimeout's.
func MillisecondsHeader(name string) DeadlineFormat {
	f := DeadlineFormat(http.CanonicalHeaderKey(name))
	if name == "" || !validHeaderName(name) || f == GRPCTimeout {
		panic("retryhttp: MillisecondsHeader: invalid header name " + strconv.Quote(name))
	}
	return f
}

// checkFormats returns formats with their names in canonical form, and
// panics, naming fn, if there is none or one is not a valid header name.
func checkFormats(fn string, formats []DeadlineFormat) []DeadlineFormat {
	if len(formats) == 0 {
		panic("retryhttp: " + fn + ": no DeadlineFormat")
	}
	out := make([]DeadlineFormat, 0, len(formats))
	for _, f := range formats {
		if f == "" || !validHeaderName(string(f)) {
			panic("retryhttp: " + fn + ": invalid header name " + strconv.Quote(string(f)))
		}
		out = append(out, DeadlineFormat(http.CanonicalHeaderKey(string(f))))
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

// appendValue appends d, a positive time left, in f's format: for
// GRPCTimeout as appendGRPCTimeout does, for the others in whole
// milliseconds, rounded down, so that a layer below is never told of time
// its caller does not have, and at most msMaxValue, 10 digits.
func (f DeadlineFormat) appendValue(b []byte, d time.Duration) []byte {
	if f == GRPCTimeout {
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

// A deadlineValue is what one header value says of a request's deadline.
type deadlineValue int

const (
	deadlineMalformed deadlineValue = iota // not a value of the format
	deadlineNone                           // a valid value that sets no deadline
	deadlineSet                            // the time left, possibly 0
)

// parseValue reads one value of a header in f's format: the time left, or
// deadlineNone, or deadlineMalformed. Spaces and tabs around the value are
// ignored, as HTTP ignores them around a field value; anything else that is
// not the format (a sign, a fraction, spaces inside, a missing or unknown
// unit, a list) makes the value malformed.
func (f DeadlineFormat) parseValue(s string) (time.Duration, deadlineValue) {
	s = wire.TrimOWS(s)
	if f == GRPCTimeout {
		return parseGRPCTimeout(s)
	}
	n, ok := wire.Digits(s)
	switch {
	case !ok || len(s) > msMaxDigits:
		return 0, deadlineMalformed
	case n > 0:
		return time.Duration(n) * time.Millisecond, deadlineSet
	case f == EnvoyTimeout:
		return 0, deadlineNone // Envoy's 0 is no timeout
	default:
		return 0, deadlineMalformed // Connect asks for a positive number; so do we
	}
}

// parseGRPCTimeout reads a grpc-timeout value without surrounding spaces.
// A value too long for a time.Duration (more than 2.5 million hours) is
// the longest time.Duration, as gRPC reads it.
func parseGRPCTimeout(s string) (time.Duration, deadlineValue) {
	if len(s) < 2 {
		return 0, deadlineMalformed
	}
	n, ok := wire.Digits(s[:len(s)-1])
	if !ok || len(s) > 9 {
		return 0, deadlineMalformed
	}
	for _, u := range grpcUnits {
		if s[len(s)-1] == u.sign {
			return wire.Units(n, u.unit), deadlineSet
		}
	}
	return 0, deadlineMalformed
}
