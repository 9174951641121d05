package wire

import (
	"net/http"
	"time"
)

// HasRetryAfter reports whether h carries any of the headers by which a
// server asks for a delay.
func HasRetryAfter(h http.Header) bool {
	return len(h["Retry-After"]) > 0 || len(h["Retry-After-Ms"]) > 0 || len(h["X-Ms-Retry-After-Ms"]) > 0
}

// ParseRetryAfter is classify.ParseRetryAfter, which documents it: the
// delay one Retry-After value asks for as of now, in seconds or as an
// HTTP-date.
func ParseRetryAfter(value string, now time.Time) (time.Duration, bool) {
	value = TrimOWS(value)
	if value == "" {
		return 0, false
	}
	if d, ok := ParseDelaySeconds(value); ok {
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

// RetryAfter returns the delay a response with header h asks for as of
// now: the longest of its Retry-After values, an HTTP-date measured against
// the response's Date when it has a valid one, and of the millisecond
// headers some APIs send beside or instead of it (Retry-After-Ms,
// X-Ms-Retry-After-Ms); 0 when none is usable. A Retry-After value longer
// than maxLen is ignored, unless maxLen is 0.
func RetryAfter(h http.Header, now time.Time, maxLen int) time.Duration {
	var d time.Duration
	// Canonical keys, read directly: no allocation.
	for _, v := range h["Retry-After"] {
		if maxLen > 0 && len(v) > maxLen {
			continue
		}
		v = TrimOWS(v)
		if ra, ok := ParseRetryAfter(v, ServerNow(h, v, now)); ok {
			d = max(d, ra)
		}
	}
	for _, key := range [...]string{"Retry-After-Ms", "X-Ms-Retry-After-Ms"} {
		for _, v := range h[key] {
			if ms, ok := ParseDelayMillis(TrimOWS(v)); ok {
				d = max(d, ms)
			}
		}
	}
	return d
}
