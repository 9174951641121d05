package peers

import (
	"net/http"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/deadline"
)

// RetryHTTPDeadline is the name of retryhttp sending each attempt's time
// left, as it appears in the deadline tables.
const RetryHTTPDeadline = "retryhttp, deadline sent"

// NewRetryHTTPDeadline is NewRetryHTTP with
// retryhttp.WithDeadlineHeader(deadline.GRPCTimeout): each attempt of a
// request with a deadline carries the time left before it.
func NewRetryHTTPDeadline(base http.RoundTripper, c Config) http.RoundTripper {
	return newRetryHTTP(base, c, retryhttp.WithDeadlineHeader(deadline.GRPCTimeout))
}
