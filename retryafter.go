package retryhttp

import (
	"github.com/retryhttp/retryhttp/internal/wire"
	"net/http"
	"time"
)

// ParseRetryAfter parses one Retry-After header value as of now, and returns
// the delay it asks for. It reports false, with a zero delay, when the value
// asks for no delay or cannot be understood; a server's Retry-After is a
// request, and a client that cannot read it falls back to its own backoff.
//
// The value is either a number of seconds (delay-seconds: ASCII digits only,
// without sign, fraction or exponent) or an HTTP-date in any of the three
// formats http.ParseTime accepts: IMF-fixdate ("Sun, 06 Nov 1994 08:49:37
// GMT"), RFC 850 and ANSI C asctime. Spaces and tabs around the value are
// ignored. A number of seconds too large for a Duration, like a date too far
// ahead, gives the largest Duration. Zero seconds, and a date at or before
// now, give (0, false).
//
// The returned delay is never negative, and ParseRetryAfter never panics.
func ParseRetryAfter(value string, now time.Time) (time.Duration, bool) {
	value = wire.TrimOWS(value)
	if value == "" {
		return 0, false
	}
	if d, ok := wire.ParseDelaySeconds(value); ok {
		return d, d > 0
	}
	if value[0] >= '0' && value[0] <= '9' {
		// Not delay-seconds, and every HTTP-date starts with a day name.
		return 0, false
	}
	date, err := http.ParseTime(value)
	if err != nil {
		return 0, false
	}
	if d := date.Sub(now); d > 0 { // Sub saturates: d cannot wrap negative
		return d, true
	}
	return 0, false
}

// retryAfterFloor reads the delay the server asked for as of now: the
// Retry-After header, and the millisecond headers some APIs send beside or
// instead of it (retry-after-ms, x-ms-retry-after-ms). It returns the least
// delay the server asked for (0 when absent or unusable), and tooLong=true
// when that delay exceeds limit: the caller must then not retry at all and
// return the response as it is. When tooLong is true floor is 0. When
// several values are given (a header repeated, or more than one of these
// headers), the longest wait counts: waiting less than any of them would
// retry sooner than the server asked. Unusable values are ignored. A
// negative limit counts as zero. An HTTP-date is measured against the
// response's Date header when it has a valid one, so that a client whose
// clock is off still waits as long as the server asked.
func retryAfterFloor(h http.Header, now time.Time, limit time.Duration) (floor time.Duration, tooLong bool) {
	// Canonical keys, read directly: no allocation.
	for _, v := range h["Retry-After"] {
		v = wire.TrimOWS(v)
		if d, ok := ParseRetryAfter(v, wire.ServerNow(h, v, now)); ok {
			floor = max(floor, d)
		}
	}
	for _, key := range [...]string{"Retry-After-Ms", "X-Ms-Retry-After-Ms"} {
		for _, v := range h[key] {
			if d, ok := wire.ParseDelayMillis(wire.TrimOWS(v)); ok {
				floor = max(floor, d)
			}
		}
	}
	if floor > max(limit, 0) {
		return 0, true
	}
	return floor, false
}

// hasRetryAfter reports whether h carries any of the headers by which a
// server asks for a delay.
func hasRetryAfter(h http.Header) bool {
	return len(h["Retry-After"]) > 0 || len(h["Retry-After-Ms"]) > 0 || len(h["X-Ms-Retry-After-Ms"]) > 0
}
