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

// retryAfterFloor reads the Retry-After header of h as of now. It returns the
// least delay the server asked for (0 when absent or unusable), and
// tooLong=true when that delay exceeds limit: the caller must then not retry
// at all and return the response as it is. When tooLong is true floor is 0.
// A header sent more than once with values that differ is ignored as
// unusable; repeated identical values count once. A negative limit counts as
// zero. An HTTP-date is measured against the response's Date header when it
// has a valid one, so that a client whose clock is off still waits as long
// as the server asked.
func retryAfterFloor(h http.Header, now time.Time, limit time.Duration) (floor time.Duration, tooLong bool) {
	values := h["Retry-After"] // canonical key, read directly: no allocation
	if len(values) == 0 {
		return 0, false
	}
	value := trimOWS(values[0])
	for _, v := range values[1:] {
		if trimOWS(v) != value {
			return 0, false
		}
	}
	d, ok := ParseRetryAfter(value, serverNow(h, value, now))
	if !ok {
		return 0, false
	}
	if d > max(limit, 0) {
		return 0, true
	}
	return d, false
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
