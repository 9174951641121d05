package wire

import (
	"math"
	"net/http"
	"time"
)

// This file reads the numbers and times that servers put in header values:
// delays in seconds or milliseconds, Unix epochs, and the response's Date.
// Every reader here saturates instead of overflowing, never returns a
// negative duration, and does not allocate.

// TrimOWS removes the optional whitespace (spaces and horizontal tabs) that
// HTTP allows around a field value.
func TrimOWS(s string) string {
	for s != "" && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for s != "" && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}

// Digits parses s, a non-empty run of ASCII digits without sign, as a
// non-negative integer, saturating at math.MaxInt64. It reports false when s
// is not such a run.
func Digits(s string) (int64, bool) {
	if s == "" {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		d := int64(c - '0')
		if n > (math.MaxInt64-d)/10 {
			n = math.MaxInt64 // keep checking that the rest are digits
			continue
		}
		n = n*10 + d
	}
	return n, true
}

// Units returns n units as a Duration, saturating at the largest one.
func Units(n int64, unit time.Duration) time.Duration {
	if n > math.MaxInt64/int64(unit) {
		return math.MaxInt64
	}
	return time.Duration(n) * unit
}

// ParseDelaySeconds parses s as delay-seconds (RFC 9110): a non-empty run of
// ASCII digits, saturating at the largest Duration. It reports false when s
// is not delay-seconds.
func ParseDelaySeconds(s string) (time.Duration, bool) {
	n, ok := Digits(s)
	return Units(n, time.Second), ok
}

// ParseDelayMillis parses s as a whole number of milliseconds, a non-empty
// run of ASCII digits, saturating at the largest Duration. It reports false
// when s is not such a number or is zero.
func ParseDelayMillis(s string) (time.Duration, bool) {
	n, ok := Digits(s)
	return Units(n, time.Millisecond), ok && n > 0
}

// MaxEpochSeconds bounds the epoch seconds time.Unix is given: far beyond
// any reset a server means (the year 36812), and far from where its
// arithmetic overflows.
const MaxEpochSeconds = 1 << 40

// UntilEpoch returns the time from at until secs, Unix epoch seconds: 0 if
// that has passed, the largest Duration if it is too far to hold.
func UntilEpoch(secs int64, at time.Time) time.Duration {
	if secs > MaxEpochSeconds {
		return math.MaxInt64
	}
	return max(time.Unix(secs, 0).Sub(at), 0) // Sub saturates
}

// ResponseDate returns the server's clock when it answered, from a single
// valid Date header, or now.
func ResponseDate(h http.Header, now time.Time) time.Time {
	dates := h["Date"]
	if len(dates) != 1 {
		return now
	}
	date, err := http.ParseTime(TrimOWS(dates[0]))
	if err != nil {
		return now
	}
	return date
}

// dateAgrees bounds how far the client's clock, at the response, may be
// from its Date, before it and after the second the Date names, for the
// two clocks to be taken to agree.
const dateAgrees = 250 * time.Millisecond

// ServerClock returns the time, now by the client's clock, against which
// a time the server wrote finer than a Date can (a quota's reset in RFC
// 3339 with milliseconds) is measured: now itself when the response's Date
// agrees with it, to the second the Date names and a quarter of a second
// either side, and otherwise the middle of that second on the server's
// clock. The Date has whole seconds: measured against it, a reset a
// fraction of a second away read as up to a second longer. Without a
// single valid Date, it is now.
func ServerClock(h http.Header, now time.Time) time.Time {
	date := ResponseDate(h, now)
	if d := now.Sub(date); date.Equal(now) || d >= -dateAgrees && d < time.Second+dateAgrees {
		return now
	}
	return date.Add(time.Second / 2)
}

// ServerNow returns the time against which a Retry-After value is measured:
// for an HTTP-date, the server's clock when it answered, from a single valid
// Date header; otherwise now. An HTTP-date names an instant on the server's
// clock, so the wait it asks for is its distance from the response's Date,
// however far the client's clock has drifted.
func ServerNow(h http.Header, retryAfter string, now time.Time) time.Time {
	if retryAfter == "" || (retryAfter[0] >= '0' && retryAfter[0] <= '9') {
		return now // delay-seconds do not depend on either clock
	}
	return ResponseDate(h, now)
}
