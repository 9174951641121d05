package retryhttp

import (
	"context"
	"errors"
	"strconv"

	"github.com/retryhttp/retryhttp/internal/guard"
	"github.com/retryhttp/retryhttp/internal/wire"
)

// ErrResendStopped is the error of an attempt of a request that may not be
// sent twice (a non-idempotent request without an idempotency key) when the
// base transport set out to send it again on its own and the Transport
// stopped that second send before any byte of it was written: a caller told
// ErrResendStopped can rely on the request having been sent once, not twice.
// Whether the one send was processed is unknown, and it is not retried.
// docs/decisions.md ("What net/http resends on its own") says which of
// net/http's resends are stopped.
var ErrResendStopped = errResendStopped()

func errResendStopped() error { return guard.ErrResendStopped }

// ErrBudgetExhausted is returned by a Budget that refuses a retry.
var ErrBudgetExhausted = errBudgetExhausted()

func errBudgetExhausted() error { return wire.ErrBudgetExhausted }

// ErrAttemptTimeout is the cause of an attempt cut short by the per-attempt
// timeout (WithAttemptTimeout). Such an attempt is retried, and its retry
// costs the budget's timeout cost.
var ErrAttemptTimeout = errAttemptTimeout()

func errAttemptTimeout() error { return wire.ErrAttemptTimeout }

// ErrThrottled is the error, wrapped in an *Error with no attempts, of a
// request that adaptive throttling (WithAdaptiveThrottling) refused without
// sending it, because its host has been failing.
var ErrThrottled = errors.New("retryhttp: throttled: the host has been failing")

// ErrNoTimeLeft is the error of a request whose next attempt was not sent
// because less than 1 ms was left before its deadline (WithDeadlineHeader):
// no answer could arrive in time, and the millisecond formats cannot say so
// little. errors.Is reports it as context.DeadlineExceeded too, and it is a
// timeout (its Timeout method reports true), as the context's own error
// would be a moment later. Its ErrorType method names it "timeout", the
// value OpenTelemetry's semantic conventions give error.type for a timeout.
var ErrNoTimeLeft error = noTimeLeft{}

type noTimeLeft struct{}

func (noTimeLeft) Error() string        { return "retryhttp: less than 1ms left before the deadline" }
func (noTimeLeft) Is(target error) bool { return target == context.DeadlineExceeded }
func (noTimeLeft) Timeout() bool        { return true }
func (noTimeLeft) ErrorType() string    { return "timeout" }

// An Error reports a request that ended without any response: every attempt
// failed with an error, or the request could not be sent. Unwrap returns the
// last attempt's error, so errors.Is and errors.As see through it.
type Error struct {
	// Attempts is how many times the request was sent, 0 when it never
	// was: its attempts and the sends the base made again on its own, as
	// the function Attempts counts them.
	Attempts int
	// Err is the last attempt's error.
	Err error
}

// Error describes the failure: the attempts sent and the last attempt's
// error.
func (e *Error) Error() string {
	s := " attempts: "
	if e.Attempts == 1 {
		s = " attempt: "
	}
	return "retryhttp: " + strconv.Itoa(e.Attempts) + s + e.Err.Error()
}

// Unwrap returns the last attempt's error.
func (e *Error) Unwrap() error { return e.Err }

// Timeout reports whether the last attempt's error was a timeout, as
// net.Error does, so that url.Error.Timeout keeps working through an *Error.
func (e *Error) Timeout() bool { return wire.IsTimeout(e.Err) }
