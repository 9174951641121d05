package retryhttp

import (
	"github.com/retryhttp/retryhttp/internal/guard"
	"github.com/retryhttp/retryhttp/internal/wire"
)

// ErrResendStopped is the error of an attempt of a request that may not be
// sent twice (a non-idempotent request without an idempotency key) when the
// base transport set out to send it again on its own and the Transport
// stopped that second send before any byte of it was written: a caller told
// ErrResendStopped can rely on the request having been sent once, not twice.
// Whether the one send was processed is unknown, and it is not retried.
//
// net/http resends by itself over HTTP/2, after a stream reset with
// REFUSED_STREAM or PROTOCOL_ERROR, a GOAWAY, or a connection that could not
// take the stream. Such a resend is let through when it goes out on the very
// connection that failed, which only REFUSED_STREAM (by which the server says
// it did not process the request) and a stream never opened leave usable,
// and stopped otherwise: a PROTOCOL_ERROR reset does not prove that the
// server did not process the request. A resend after an HTTP/1 send is
// never stopped: net/http resends a request it does not consider replayable
// only when it wrote nothing of it. docs/decisions.md ("What net/http resends
// on its own") says how each path is decided.
var ErrResendStopped = errResendStopped()

func errResendStopped() error { return guard.ErrResendStopped }

// ErrBudgetExhausted is returned by a Budget that refuses a retry.
var ErrBudgetExhausted = errBudgetExhausted()

func errBudgetExhausted() error { return wire.ErrBudgetExhausted }
