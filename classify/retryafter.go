package classify

import (
	"time"

	"github.com/retryhttp/retryhttp/internal/wire"
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
	return wire.ParseRetryAfter(value, now)
}
