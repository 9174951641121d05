// Package githubretry reads GitHub's rate limits, so that a retryhttp
// Transport waits out a rate-limited 403 or 429 when the limit resets soon,
// and returns it at once when it does not. Put its Classifier in front of
// the default:
//
//	retryhttp.WithClassifier(classify.First(githubretry.Classifier(), classify.Default()))
package githubretry

import (
	"net/http"
	"time"

	"github.com/retryhttp/retryhttp/classify"
	"github.com/retryhttp/retryhttp/internal/wire"
)

// Classifier recognises the rate limits of the GitHub REST
// API, which answers a request over a limit with a 403 (or a 429):
//
//   - with Retry-After, a secondary rate limit: retried with the Throttle
//     facet after the Retry-After;
//   - with x-ratelimit-remaining: 0 and x-ratelimit-reset (when the limit
//     resets, in Unix epoch seconds), a primary rate limit: retried with the
//     Throttle facet, and Verdict.RetryAfter set to the wait until the reset,
//     measured against the response's Date when it has one, so that a client
//     whose clock is off still waits as long as the server meant.
//
// As with Retry-After, a wait beyond the Transport's Retry-After limit
// (WithRetryAfterLimit, a minute by default) is not waited for: the response
// is returned at once, and the caller learns of the limit from it. A
// primary limit usually resets within the hour, so it mostly ends the
// retries at once.
//
// Any other 403 (a missing permission, an unknown token) and any other
// response abstain, nor do errors and outcomes once the request's
// context is done. It reads headers only, never the response body. Put it
// in front of the default chain of a Transport that calls GitHub:
//
//	retryhttp.WithClassifier(classify.First(githubretry.Classifier(), classify.Default()))
//
// A rate-limited request is retried only if it may be sent again: a POST
// without an idempotency key needs to be declared resendable.
func Classifier() classify.Classifier { return githubRateLimitClassifier{now: time.Now} }

type githubRateLimitClassifier struct {
	now func() time.Time // the client's clock; in-package tests replace it
}

func (c githubRateLimitClassifier) Classify(req *http.Request, resp *http.Response, _ error) classify.Verdict {
	if resp == nil || (resp.StatusCode != http.StatusForbidden && resp.StatusCode != http.StatusTooManyRequests) ||
		req.Context().Err() != nil {
		return classify.Verdict{}
	}
	if wait, ok := githubRateLimitWait(resp.Header, c.now()); ok {
		return classify.Verdict{Decision: classify.Retry, Throttle: true, RetryAfter: wait}
	}
	return classify.Verdict{}
}

// githubRateLimitWait reads GitHub's rate-limit headers as of now, the
// client's clock. It reports whether they say the request was rate limited,
// and how long to wait: the Retry-After when there is one (0 when it asks
// for no delay or cannot be read; several values that differ are ignored,
// as the Transport ignores them), or else the time until x-ratelimit-reset
// when x-ratelimit-remaining is 0. The wait is never negative, and
// saturates at the largest Duration.
func githubRateLimitWait(h http.Header, now time.Time) (time.Duration, bool) {
	at := wire.ResponseDate(h, now)
	if values := h["Retry-After"]; len(values) > 0 {
		value := wire.TrimOWS(values[0])
		for _, v := range values[1:] {
			if wire.TrimOWS(v) != value {
				return 0, true
			}
		}
		d, _ := classify.ParseRetryAfter(value, at) // delay-seconds ignore the clock
		return d, true
	}
	remaining, reset := h["X-Ratelimit-Remaining"], h["X-Ratelimit-Reset"]
	if len(remaining) == 0 || wire.TrimOWS(remaining[0]) != "0" || len(reset) == 0 {
		return 0, false
	}
	secs, ok := wire.Digits(wire.TrimOWS(reset[0]))
	if !ok {
		return 0, false
	}
	return wire.UntilEpoch(secs, at), true
}
