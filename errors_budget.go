package retryhttp

import "github.com/retryhttp/retryhttp/internal/wire"

// ErrBudgetExhausted is returned by a Budget that refuses a retry.
var ErrBudgetExhausted = wire.ErrBudgetExhausted
