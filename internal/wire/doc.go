// Package wire holds what the packages of retryhttp share about the bytes
// and errors of an exchange: readers of header fields and their values, the
// idempotency rules of RFC 9110, and the HTTP/2 errors net/http reports.
package wire

import "errors"

// ErrAttemptTimeout is the cause of an attempt cut short by the per-attempt
// timeout; the root package exports it.
var ErrAttemptTimeout = errors.New("retryhttp: attempt timed out")

// ShouldRetryHeader is the response header by which a server tells clients
// whether to retry: "true" or "false". Several widely used API SDKs honour
// it, and Handler sets it.
const ShouldRetryHeader = "X-Should-Retry"

// PeekLimit is the most bytes classify.Peek reads of a response body: more
// than any API's error document needs (AWS, Google and Azure send a few
// hundred bytes), little enough to cost nothing worth counting on the error
// path.
const PeekLimit = 8 << 10

// ErrBudgetExhausted is the error of a retry the budget refused; the root
// package exports it.
var ErrBudgetExhausted = errors.New("retryhttp: retry budget exhausted")

// IsTimeout reports whether err, or an error it wraps, says it is a
// timeout, as net.Error does.
func IsTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}
