package retryhttp

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// AWSErrorClassifier judges the error responses of AWS services by the
// error code they carry in a header, the code the AWS SDKs decide their
// own retries by (AWSErrorCode reads it):
//
//   - a throttling code (ThrottlingException, Throttling,
//     ProvisionedThroughputExceededException, RequestLimitExceeded,
//     SlowDown, TooManyRequestsException and the others the AWS SDK for Go
//     v2 treats as throttling) is retried with the Throttle facet, whatever
//     the status, so that DynamoDB's throttling 400 is retried and paced as
//     a 429 is;
//   - a transient code (RequestTimeout, RequestTimeoutException) is retried;
//   - any other code on a 4xx response is final: a validation error, a
//     failed condition or a signature the server rejected is not fixed by
//     sending the same bytes again. A 408 or 429 is left to its status.
//
// A 503 without a code is retried with the Throttle facet, unless it
// carries X-Should-Retry: S3 answers "SlowDown" (reduce your request rate)
// with a 503 whose code is only in its XML body, and the AWS SDKs pace
// SlowDown as a throttle. Other responses, and a 5xx with a code that is
// neither throttling nor transient, have no opinion, which leaves them to
// the rest of the chain (DefaultClassifier retries 5xx). So do errors, and
// every outcome once the request's context is done.
//
// It reads headers only, never the response body. Put it in front of the
// default chain of a Transport that calls AWS:
//
//	retryhttp.WithClassifier(retryhttp.Chain{retryhttp.AWSErrorClassifier(), retryhttp.DefaultClassifier()})
//
// Whether a request may be sent again is not the classifier's to decide:
// the AWS JSON and query protocols send every call as a POST, which is
// resent only when it is declared resendable (or carries an idempotency
// key, or provably never reached the server).
func AWSErrorClassifier() Classifier { return awsErrorClassifier{} }

type awsErrorClassifier struct{}

func (awsErrorClassifier) Classify(req *http.Request, resp *http.Response, _ error) Verdict {
	if resp == nil || resp.StatusCode < 400 || req.Context().Err() != nil {
		return Verdict{}
	}
	code := AWSErrorCode(resp.Header)
	switch {
	case code == "":
		if resp.StatusCode == http.StatusServiceUnavailable && len(resp.Header[ShouldRetryHeader]) == 0 {
			return Verdict{Decision: Retry, Throttle: true}
		}
		return Verdict{}
	case awsThrottleCode(code):
		return Verdict{Decision: Retry, Throttle: true}
	case code == "RequestTimeout" || code == "RequestTimeoutException":
		return Verdict{Decision: Retry}
	case resp.StatusCode < 500 && resp.StatusCode != http.StatusRequestTimeout && resp.StatusCode != http.StatusTooManyRequests:
		return Verdict{Decision: DontRetry}
	}
	return Verdict{}
}

// awsThrottleCode reports the error codes that the AWS SDK for Go v2 treats
// as throttling (its retry.DefaultThrottleErrorCodes).
func awsThrottleCode(code string) bool {
	switch code {
	case "Throttling", "ThrottlingException", "ThrottledException", "RequestThrottledException",
		"TooManyRequestsException", "ProvisionedThroughputExceededException",
		"TransactionInProgressException", "RequestLimitExceeded", "BandwidthLimitExceeded",
		"LimitExceededException", "RequestThrottled", "SlowDown", "PriorRequestNotComplete",
		"EC2ThrottledException":
		return true
	}
	return false
}

// AWSErrorCode returns the error code of an AWS service's response, read
// from its headers as the AWS SDKs read it, or "" when the headers carry
// none. X-Amzn-ErrorType, which the JSON protocols send (DynamoDB among
// them), comes first; its value may name the code's namespace before a '#'
// and add a URI after a ':', both of which are dropped:
// "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException:http://..."
// gives "ProvisionedThroughputExceededException". Otherwise X-Amz-Error-Code,
// which S3 sends on responses that have no body to hold the code, such as
// HEAD's.
//
// S3 and the other XML protocols name the code of most errors only in the
// response body, which this does not read.
func AWSErrorCode(h http.Header) string {
	if v := h["X-Amzn-Errortype"]; len(v) > 0 {
		code := trimOWS(v[0])
		if i := strings.IndexByte(code, ':'); i >= 0 {
			code = code[:i]
		}
		if i := strings.IndexByte(code, '#'); i >= 0 {
			code = code[i+1:]
		}
		if code = trimOWS(code); code != "" {
			return code
		}
	}
	if v := h["X-Amz-Error-Code"]; len(v) > 0 {
		return trimOWS(v[0])
	}
	return ""
}

// GitHubRateLimitClassifier recognises the rate limits of the GitHub REST
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
// response have no opinion, nor do errors and outcomes once the request's
// context is done. It reads headers only, never the response body. Put it
// in front of the default chain of a Transport that calls GitHub:
//
//	retryhttp.WithClassifier(retryhttp.Chain{retryhttp.GitHubRateLimitClassifier(), retryhttp.DefaultClassifier()})
//
// A rate-limited request is retried only if it may be sent again: a POST
// without an idempotency key needs to be declared resendable.
func GitHubRateLimitClassifier() Classifier { return githubRateLimitClassifier{now: time.Now} }

type githubRateLimitClassifier struct {
	now func() time.Time // the client's clock; in-package tests replace it
}

func (c githubRateLimitClassifier) Classify(req *http.Request, resp *http.Response, _ error) Verdict {
	if resp == nil || (resp.StatusCode != http.StatusForbidden && resp.StatusCode != http.StatusTooManyRequests) ||
		req.Context().Err() != nil {
		return Verdict{}
	}
	if wait, ok := githubRateLimitWait(resp.Header, c.now()); ok {
		return Verdict{Decision: Retry, Throttle: true, RetryAfter: wait}
	}
	return Verdict{}
}

// githubRateLimitWait reads GitHub's rate-limit headers as of now, the
// client's clock. It reports whether they say the request was rate limited,
// and how long to wait: the Retry-After when there is one (0 when it asks
// for no delay or cannot be read; several values that differ are ignored,
// as the Transport ignores them), or else the time until x-ratelimit-reset
// when x-ratelimit-remaining is 0. The wait is never negative, and
// saturates at the largest Duration.
func githubRateLimitWait(h http.Header, now time.Time) (time.Duration, bool) {
	at := responseDate(h, now)
	if values := h["Retry-After"]; len(values) > 0 {
		value := trimOWS(values[0])
		for _, v := range values[1:] {
			if trimOWS(v) != value {
				return 0, true
			}
		}
		d, _ := ParseRetryAfter(value, at) // delay-seconds ignore the clock
		return d, true
	}
	remaining, reset := h["X-Ratelimit-Remaining"], h["X-Ratelimit-Reset"]
	if len(remaining) == 0 || trimOWS(remaining[0]) != "0" || len(reset) == 0 {
		return 0, false
	}
	secs, ok := epochSeconds(trimOWS(reset[0]))
	if !ok {
		return 0, false
	}
	return untilEpoch(secs, at), true
}

// maxEpochSeconds bounds the epoch seconds time.Unix is given: far beyond
// any reset a server means (the year 36812), and far from where its
// arithmetic overflows.
const maxEpochSeconds = 1 << 40

// epochSeconds parses s, a non-empty run of ASCII digits, as Unix epoch
// seconds. A value too large for an int64 counts as the largest.
func epochSeconds(s string) (int64, bool) {
	if s == "" {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 1<<63 - 1, true // digits only: out of range
	}
	return n, true
}

// untilEpoch returns the time from at until secs, Unix epoch seconds: 0 if
// that has passed, the largest Duration if it is too far to hold.
func untilEpoch(secs int64, at time.Time) time.Duration {
	if secs > maxEpochSeconds {
		return 1<<63 - 1
	}
	return max(time.Unix(secs, 0).Sub(at), 0) // Sub saturates
}
