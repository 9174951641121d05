// Package wire holds what the packages of retryhttp share about the bytes
// and errors of an exchange: readers of header fields and their values, the
// idempotency rules of RFC 9110, and the HTTP/2 errors net/http reports.
package wire

import "errors"

// ErrAttemptTimeout is the cause of an attempt cut short by the per-attempt
// timeout; the root package exports it.
var ErrAttemptTimeout = errors.New("retryhttp: attempt timed out")
