package retryhttp

import (
	"net/http"
	"strings"
	"time"

	"github.com/retryhttp/retryhttp/classify"
	"github.com/retryhttp/retryhttp/internal/wire"
)

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
		if d, ok := classify.ParseRetryAfter(v, wire.ServerNow(h, v, now)); ok {
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

// epochThreshold separates the two readings of X-RateLimit-Reset: smaller
// values are seconds from now, larger ones (past September 2001) seconds
// since the Unix epoch.
const epochThreshold = 1_000_000_000

// rateLimitReset reads when the server's rate limit window resets, and
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
func rateLimitReset(h http.Header, now time.Time) (time.Duration, bool) {
	for _, v := range h["Ratelimit"] {
		if secs, remaining, ok := rateLimitParams(v); ok {
			if quotaLeft(remaining) {
				return 0, false
			}
			d, ok := wire.ParseDelaySeconds(secs)
			return d, ok && d > 0
		}
	}
	values := h["X-Ratelimit-Reset"]
	if len(values) == 0 {
		return 0, false
	}
	if remaining := h["X-Ratelimit-Remaining"]; len(remaining) > 0 && quotaLeft(wire.TrimOWS(remaining[0])) {
		return 0, false
	}
	n, ok := wire.Digits(wire.TrimOWS(values[0]))
	switch {
	case !ok || n == 0:
		return 0, false
	case n < epochThreshold:
		return wire.Units(n, time.Second), true
	}
	d := wire.UntilEpoch(n, wire.ResponseDate(h, now))
	return d, d > 0
}

// quotaLeft reports whether a rate limit's remaining count says requests
// remain: a number above zero in ASCII digits, after an optional '+',
// however large. An absent or unreadable count does not. (strconv.ParseInt
// cannot tell: past the int64 maximum it reports ErrRange before it has
// read the rest, so "99999999999999999999x" looks like a large count.)
func quotaLeft(remaining string) bool {
	n, ok := wire.Digits(strings.TrimPrefix(remaining, "+"))
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
			reset, ok = wire.TrimOWS(val), true
		case key == "remaining" || key == "r":
			remaining = wire.TrimOWS(val)
		}
	}
	return reset, remaining, ok
}
