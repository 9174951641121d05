package pacing

import (
	"net/http"
	"time"

	"github.com/retryhttp/retryhttp/internal/wire"
)

// This file reads the vendors' rate-limit headers. Every reader is a pure
// function of the header and the client's clock, reads at most maxValueLen
// bytes of a value (a longer value counts as absent), never panics, and
// saturates instead of overflowing.

// maxValueLen bounds a number, duration or time read from a header.
const maxValueLen = 64

// value returns the first value of the field key, canonical, of h without
// its optional whitespace, and reports false when there is none or it is
// too long to be meant.
func value(h http.Header, key string) (string, bool) {
	vs := h[key]
	if len(vs) == 0 || len(vs[0]) > maxValueLen {
		return "", false
	}
	return wire.TrimOWS(vs[0]), true
}

// count reads the field key of h as a count: ASCII digits, saturating at
// math.MaxInt64; -1 when absent or unreadable.
func count(h http.Header, key string) int64 {
	v, ok := value(h, key)
	if !ok {
		return -1
	}
	n, ok := wire.Digits(v)
	if !ok {
		return -1
	}
	return n
}

// epochThreshold separates the two readings of X-RateLimit-Reset, as the
// root's does: smaller values are seconds from now, larger ones (past
// September 2001) seconds since the Unix epoch.
const epochThreshold = 1_000_000_000

// readXRateLimit reads GitHub's x-ratelimit-remaining, x-ratelimit-reset
// (when the window ends, in Unix epoch seconds; a smaller number, as
// other APIs send, is seconds from now) and x-ratelimit-limit. An epoch is
// measured against the response's Date when it has a valid one, so that a
// client whose clock is off still reads the time the server meant.
func readXRateLimit(h http.Header, now time.Time) (quota, bool) {
	q := quota{Remaining: count(h, "X-Ratelimit-Remaining"), Limit: max(count(h, "X-Ratelimit-Limit"), 0)}
	if q.Remaining < 0 {
		return noQuota, false
	}
	if n := count(h, "X-Ratelimit-Reset"); n > 0 {
		if n < epochThreshold {
			q.Reset = wire.Units(n, time.Second)
		} else {
			q.Reset = wire.UntilEpoch(n, wire.ResponseDate(h, now))
		}
	}
	return q, true
}

// readOpenAI reads OpenAI's x-ratelimit-remaining-requests,
// x-ratelimit-limit-requests and x-ratelimit-reset-requests, the time until
// the limit is whole again as a Go duration ("6m0s", "1s", "20ms"): a
// bucket that refills continuously.
func readOpenAI(h http.Header, _ time.Time) (quota, bool) {
	q := quota{Remaining: count(h, "X-Ratelimit-Remaining-Requests"), Limit: max(count(h, "X-Ratelimit-Limit-Requests"), 0), Bucket: true}
	if q.Remaining < 0 {
		return noQuota, false
	}
	if v, ok := value(h, "X-Ratelimit-Reset-Requests"); ok {
		q.Reset, _ = parseResetDuration(v)
	}
	return q, true
}

// parseResetDuration parses a duration as OpenAI writes one: a sequence of
// decimal numbers with units ("1h2m3.5s", "20ms"), as time.ParseDuration
// reads them, without a sign. It reports false for anything else, and for
// a duration too large to hold.
func parseResetDuration(s string) (time.Duration, bool) {
	if s == "" || len(s) > maxValueLen || !isDigit(s[0]) {
		return 0, false
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, false
	}
	return d, true
}

// readAnthropic reads Anthropic's anthropic-ratelimit-requests-remaining,
// anthropic-ratelimit-requests-limit and anthropic-ratelimit-requests-reset,
// when the limit is whole again as an RFC 3339 time, measured against the
// client's clock when the response's Date agrees with it, and otherwise
// against the Date (wire.ServerClock): a bucket that refills
// continuously.
func readAnthropic(h http.Header, now time.Time) (quota, bool) {
	q := quota{Remaining: count(h, "Anthropic-Ratelimit-Requests-Remaining"), Limit: max(count(h, "Anthropic-Ratelimit-Requests-Limit"), 0), Bucket: true}
	if q.Remaining < 0 {
		return noQuota, false
	}
	if v, ok := value(h, "Anthropic-Ratelimit-Requests-Reset"); ok {
		if at, err := time.Parse(time.RFC3339, v); err == nil {
			q.Reset = max(at.Sub(wire.ServerClock(h, now)), 0) // Sub saturates
		}
	}
	return q, true
}

// shopifyWindow is the time Shopify's bucket takes to leak whole: 40
// calls at 2 a second, or 400 at 20 on Shopify Plus.
const shopifyWindow = 20 * time.Second

// readShopify reads Shopify's X-Shopify-Shop-Api-Call-Limit, "32/40": a
// leaky bucket of 40 calls holding 32, which leaks a twentieth of its size
// a second. What remains is the room in the bucket, and it is empty again
// when what it holds has leaked.
func readShopify(h http.Header, _ time.Time) (quota, bool) {
	v, ok := value(h, "X-Shopify-Shop-Api-Call-Limit")
	if !ok {
		return noQuota, false
	}
	var used, size int64
	for i := 0; i < len(v); i++ {
		if v[i] != '/' {
			continue
		}
		u, uok := wire.Digits(wire.TrimOWS(v[:i]))
		s, sok := wire.Digits(wire.TrimOWS(v[i+1:]))
		if !uok || !sok || s == 0 {
			return noQuota, false
		}
		used, size = min(u, s), s
		break
	}
	if size == 0 {
		return noQuota, false
	}
	return quota{
		Remaining: size - used,
		Reset:     time.Duration(float64(used) / float64(size) * float64(shopifyWindow)),
		Limit:     size,
		Window:    shopifyWindow,
		Bucket:    true,
	}, true
}
