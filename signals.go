package retryhttp

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ShouldRetryHeader is the response header by which a server tells clients
// whether to retry: "true" or "false". Several widely used API SDKs honour
// it, and server.Handler sets it.
const ShouldRetryHeader = "X-Should-Retry"

// ServerSignalClassifier follows what the server said about retrying in the
// named response headers (by default ShouldRetryHeader): "false" makes the
// outcome final even for a retryable status, and "true" makes it retryable
// even for a status the rest of the chain would refuse, except a 1xx or 2xx
// success, which is never retried. A retry it allows is still subject to the
// idempotency rules, the attempt limit and the budget. Values are compared
// without regard to the case of their ASCII letters ("TRUE" is "true"); other
// values, and responses without the headers, have no opinion. The first
// named header present decides.
func ServerSignalClassifier(headers ...string) Classifier {
	if len(headers) == 0 {
		return serverSignalClassifier{} // no names: ShouldRetryHeader
	}
	names := make([]string, len(headers))
	for i, h := range headers {
		names[i] = http.CanonicalHeaderKey(h)
	}
	return serverSignalClassifier{names: names}
}

type serverSignalClassifier struct{ names []string }

func (c serverSignalClassifier) Classify(_ *http.Request, resp *http.Response, _ error) Verdict {
	if resp == nil || resp.StatusCode < 300 {
		return Verdict{} // a success is never retried
	}
	switch serverSignal(resp.Header, c.names) {
	case signalRetry:
		// Keep the status's own facets, so that a throttled answer is
		// still paced as one.
		v := (statusClassifier{}).Classify(nil, resp, nil)
		return Verdict{Decision: Retry, Throttle: v.Throttle, Timeout: v.Timeout}
	case signalFinal:
		return Verdict{Decision: DontRetry}
	}
	return Verdict{}
}

type signal uint8

const (
	signalNone signal = iota
	signalRetry
	signalFinal
)

// serverSignal reads the first of the named headers present in h; no names
// means ShouldRetryHeader.
func serverSignal(h http.Header, names []string) signal {
	if names == nil {
		return parseSignal(h[ShouldRetryHeader])
	}
	for _, name := range names {
		if values := h[name]; len(values) > 0 {
			return parseSignal(values)
		}
	}
	return signalNone
}

func parseSignal(values []string) signal {
	if len(values) == 0 {
		return signalNone
	}
	switch v := trimOWS(values[0]); {
	case equalFoldASCII(v, "true"):
		return signalRetry
	case equalFoldASCII(v, "false"):
		return signalFinal
	}
	return signalNone
}

// equalFoldASCII reports whether s is word, a lower-case ASCII word, with
// its ASCII letters in any case, as HTTP compares tokens. strings.EqualFold
// would also take other letters that fold to ASCII ones: "falſe", with a
// long s, for "false".
func equalFoldASCII(s, word string) bool {
	if len(s) != len(word) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != word[i] {
			return false
		}
	}
	return true
}

// IdempotencyConflictClassifier judges the answers of servers that
// implement idempotency keys, for requests that carry one: 409 Conflict
// means the first request with that key is still being processed, so the
// request is retried, paced as a throttled one to give the original time to
// finish; 422 Unprocessable Content means the key was used before with
// another payload, so it is final. It has no opinion otherwise.
func IdempotencyConflictClassifier() Classifier { return conflictClassifier{} }

type conflictClassifier struct{}

func (conflictClassifier) Classify(req *http.Request, resp *http.Response, _ error) Verdict {
	if resp == nil {
		return Verdict{}
	}
	switch code := resp.StatusCode; {
	case code == http.StatusConflict && hasIdempotencyKey(req.Header):
		return Verdict{Decision: Retry, Throttle: true}
	case code == http.StatusUnprocessableEntity && hasIdempotencyKey(req.Header):
		return Verdict{Decision: DontRetry}
	}
	return Verdict{}
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
			d, ok := parseDelaySeconds(secs)
			return d, ok && d > 0
		}
	}
	values := h["X-Ratelimit-Reset"]
	if len(values) == 0 {
		return 0, false
	}
	if remaining := h["X-Ratelimit-Remaining"]; len(remaining) > 0 && quotaLeft(trimOWS(remaining[0])) {
		return 0, false
	}
	n, ok := digits(trimOWS(values[0]))
	switch {
	case !ok || n == 0:
		return 0, false
	case n < epochThreshold:
		return units(n, time.Second), true
	}
	d := untilEpoch(n, responseDate(h, now))
	return d, d > 0
}

// quotaLeft reports whether a rate limit's remaining count says requests
// remain: a number above zero in ASCII digits, after an optional '+',
// however large. An absent or unreadable count does not. (strconv.ParseInt
// cannot tell: past the int64 maximum it reports ErrRange before it has
// read the rest, so "99999999999999999999x" looks like a large count.)
func quotaLeft(remaining string) bool {
	n, ok := digits(strings.TrimPrefix(remaining, "+"))
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
			reset, ok = trimOWS(val), true
		case key == "remaining" || key == "r":
			remaining = trimOWS(val)
		}
	}
	return reset, remaining, ok
}

// attemptHeaderValue is the value of the attempt header: the attempt's
// number and the most there will be, as "2/3".
func attemptHeaderValue(attempt, max int) string {
	return strconv.Itoa(attempt) + "/" + strconv.Itoa(max)
}
