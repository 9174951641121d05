package wire

import (
	"net/http"
	"strings"
	"time"
)

// epochThreshold separates the two readings of X-RateLimit-Reset: smaller
// values are seconds from now, larger ones (past September 2001) seconds
// since the Unix epoch.
const epochThreshold = 1_000_000_000

// RateLimitReset reads when the server's rate limit window resets, and
// returns the wait until then, but only when the quota is spent: servers
// send the window's reset with every response, and a reset while requests
// remain says nothing about when to retry. It reads the RateLimit header
// (its "reset" or "t" parameter, in seconds, spent when its "remaining" or
// "r" parameter is 0 or absent, as the IETF drafts define them) or else
// X-RateLimit-Reset (seconds from now, or Unix epoch seconds), spent when
// X-RateLimit-Remaining is 0 or absent. An epoch is measured against the
// response's Date when it has a valid one, as a Retry-After date is. It
// reports false when no spent quota gives a wait in the future. Like
// Retry-After, a value too large saturates.
func RateLimitReset(h http.Header, now time.Time) (time.Duration, bool) {
	for _, v := range h["Ratelimit"] {
		if secs, remaining, ok := rateLimitParams(v); ok {
			if quotaLeft(remaining) {
				return 0, false
			}
			d, ok := ParseDelaySeconds(secs)
			return d, ok && d > 0
		}
	}
	values := h["X-Ratelimit-Reset"]
	if len(values) == 0 {
		return 0, false
	}
	if remaining := h["X-Ratelimit-Remaining"]; len(remaining) > 0 && quotaLeft(TrimOWS(remaining[0])) {
		return 0, false
	}
	n, ok := Digits(TrimOWS(values[0]))
	switch {
	case !ok || n == 0:
		return 0, false
	case n < epochThreshold:
		return Units(n, time.Second), true
	}
	d := UntilEpoch(n, ResponseDate(h, now))
	return d, d > 0
}

// quotaLeft reports whether a rate limit's remaining count says requests
// remain: a number above zero in ASCII digits, after an optional '+',
// however large. An absent or unreadable count does not. (strconv.ParseInt
// cannot tell: past the int64 maximum it reports ErrRange before it has
// read the rest, so "99999999999999999999x" looks like a large count.)
func quotaLeft(remaining string) bool {
	n, ok := Digits(strings.TrimPrefix(remaining, "+"))
	return ok && n > 0
}

// rateLimitParams finds the reset and remaining parameters of one RateLimit
// field value: "reset=N" and "remaining=N" in the older drafts' form
// ("limit=100, remaining=0, reset=30"), or "t=N" and "r=N" in the
// structured form ("default";r=0;t=30). ok reports a reset.
func rateLimitParams(v string) (reset, remaining string, ok bool) {
	for _, item := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ';' }) {
		key, val, found := strings.Cut(strings.TrimSpace(item), "=")
		switch {
		case !found:
		case key == "reset" || key == "t":
			reset, ok = TrimOWS(val), true
		case key == "remaining" || key == "r":
			remaining = TrimOWS(val)
		}
	}
	return reset, remaining, ok
}
