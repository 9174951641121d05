package retryhttp

import "errors"

// ErrAttemptTimeout is the cause of an attempt cut short by the per-attempt
// timeout (WithAttemptTimeout). Such an attempt is retried, and its retry
// costs the budget's timeout cost.
var ErrAttemptTimeout = errors.New("retryhttp: attempt timed out")
