package retryhttp

import (
	"math"
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
	value = trimOWS(value)
	if value == "" {
		return 0, false
	}
	if d, ok := parseDelaySeconds(value); ok {
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

// maxDelaySeconds is the largest number of whole seconds a Duration holds.
const maxDelaySeconds = math.MaxInt64 / int64(time.Second)

// parseDelaySeconds parses s as delay-seconds, a non-empty run of ASCII
// digits, saturating at the largest Duration. It reports false when s is not
// delay-seconds.
func parseDelaySeconds(s string) (time.Duration, bool) {
	if s == "" {
		return 0, false
	}
	var secs int64
	saturated := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		if saturated {
			continue // keep checking that the rest are digits
		}
		// secs*10 + digit ≤ maxDelaySeconds, checked without overflow.
		digit := int64(c - '0')
		if secs > (maxDelaySeconds-digit)/10 {
			saturated = true
			continue
		}
		secs = secs*10 + digit
	}
	if saturated {
		return math.MaxInt64, true
	}
	return time.Duration(secs) * time.Second, true
}

// trimOWS removes the optional whitespace (spaces and horizontal tabs) that
// HTTP allows around a field value.
func trimOWS(s string) string {
	for s != "" && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for s != "" && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
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
		v = trimOWS(v)
		if d, ok := ParseRetryAfter(v, serverNow(h, v, now)); ok {
			floor = max(floor, d)
		}
	}
	for _, key := range [...]string{"Retry-After-Ms", "X-Ms-Retry-After-Ms"} {
		for _, v := range h[key] {
			if d, ok := parseDelayMillis(trimOWS(v)); ok {
				floor = max(floor, d)
			}
		}
	}
	if floor > max(limit, 0) {
		return 0, true
	}
	return floor, false
}

// parseDelayMillis parses s as a whole number of milliseconds, a non-empty
// run of ASCII digits, saturating at the largest Duration. It reports false
// when s is not such a number or is zero.
func parseDelayMillis(s string) (time.Duration, bool) {
	if s == "" {
		return 0, false
	}
	const maxMillis = math.MaxInt64 / int64(time.Millisecond)
	var ms int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		if ms > (maxMillis-int64(c-'0'))/10 {
			ms = -1 // saturated; keep checking that the rest are digits
		}
		if ms >= 0 {
			ms = ms*10 + int64(c-'0')
		}
	}
	if ms < 0 {
		return math.MaxInt64, true
	}
	return time.Duration(ms) * time.Millisecond, ms > 0
}

// hasRetryAfter reports whether h carries any of the headers by which a
// server asks for a delay.
func hasRetryAfter(h http.Header) bool {
	return len(h["Retry-After"]) > 0 || len(h["Retry-After-Ms"]) > 0 || len(h["X-Ms-Retry-After-Ms"]) > 0
}

// serverNow returns the time against which the Retry-After value is
// measured: for an HTTP-date, the server's clock when it answered, from a
// single valid Date header; otherwise now. An HTTP-date names an instant on
// the server's clock, so the wait it asks for is its distance from the
// response's Date, however far the client's clock has drifted.
func serverNow(h http.Header, retryAfter string, now time.Time) time.Time {
	if retryAfter == "" || (retryAfter[0] >= '0' && retryAfter[0] <= '9') {
		return now // delay-seconds do not depend on either clock
	}
	return responseDate(h, now)
}

// responseDate returns the server's clock when it answered, from a single
// valid Date header, or now.
func responseDate(h http.Header, now time.Time) time.Time {
	dates := h["Date"]
	if len(dates) != 1 {
		return now
	}
	date, err := http.ParseTime(trimOWS(dates[0]))
	if err != nil {
		return now
	}
	return date
}
