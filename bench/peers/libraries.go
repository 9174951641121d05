package peers

import (
	"net/http"
	"sync/atomic"

	"github.com/failsafe-go/failsafe-go/budget"
	"github.com/failsafe-go/failsafe-go/failsafehttp"
	"github.com/failsafe-go/failsafe-go/retrypolicy"
	"github.com/hashicorp/go-retryablehttp"
	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/backoff"
	"github.com/retryhttp/retryhttp/pace"
)

// NewRetryHTTP returns a retryhttp Transport over base (its own default
// base, go-cleanhttp's pooled transport, when base is nil). With c.Base set,
// both its ordinary and its throttle backoff are full jitter over
// exponential backoff from c.Base; otherwise they are its defaults (from
// 50 ms and 1 s). Its per-host budget stays on unless c.NoBudget.
func NewRetryHTTP(base http.RoundTripper, c Config) http.RoundTripper {
	return newRetryHTTP(base, c)
}

// NewRetryHTTPHedging is NewRetryHTTP with hedging on (WithHedging(), at
// its defaults). It counts the hedges it sends in HedgesSent.
func NewRetryHTTPHedging(base http.RoundTripper, c Config) http.RoundTripper {
	return newRetryHTTP(base, c, retryhttp.WithHedging(), retryhttp.WithOnHedge(func(retryhttp.HedgeEvent) { HedgesSent.Add(1) }))
}

// NewRetryHTTPPacing is NewRetryHTTP with pacing on (WithPacing(), at its
// defaults): each host that throttles is sent requests at the rate it
// accepts, and a request whose turn is further off than 10 s or its
// deadline fails at once with a *pace.Error.
func NewRetryHTTPPacing(base http.RoundTripper, c Config) http.RoundTripper {
	return newRetryHTTP(base, c, retryhttp.WithPacing())
}

// RetryHTTPPaced returns retryhttp with WithPacing(opts...), named name in
// tables: NewRetryHTTPPacing with the options a table sets, such as
// pace.MaxWait, pace.Quota or pace.Shared.
func RetryHTTPPaced(name string, opts ...pace.Option) Library {
	return Library{name, func(base http.RoundTripper, c Config) http.RoundTripper {
		return newRetryHTTP(base, c, retryhttp.WithPacing(opts...))
	}}
}

// HedgesSent counts the hedges every Transport NewRetryHTTPHedging made has
// sent: over HTTP/1 each needs a connection of its own, and a loser
// cancelled in flight closes its.
var HedgesSent atomic.Int64

// newRetryHTTP is NewRetryHTTP with more options: with c.AttemptTimeout
// set, retryhttp.WithAttemptTimeout, and then extra.
func newRetryHTTP(base http.RoundTripper, c Config, extra ...retryhttp.Option) http.RoundTripper {
	opts := []retryhttp.Option{retryhttp.WithMaxAttempts(c.attempts())}
	if base != nil {
		opts = append(opts, retryhttp.WithBase(base))
	}
	switch {
	case c.Delay > 0:
		b := backoff.Constant(c.Delay)
		opts = append(opts, retryhttp.WithBackoff(b), retryhttp.WithThrottleBackoff(b))
	case c.Base > 0:
		b := backoff.FullJitter(backoff.Exponential(c.Base, c.cap()))
		opts = append(opts, retryhttp.WithBackoff(b), retryhttp.WithThrottleBackoff(b))
	}
	if c.NoBudget {
		opts = append(opts, retryhttp.WithoutBudget())
	}
	if c.AttemptTimeout > 0 {
		opts = append(opts, retryhttp.WithAttemptTimeout(c.AttemptTimeout))
	}
	return retryhttp.New(append(opts, extra...)...)
}

// NewRetryableHTTP returns go-retryablehttp's RoundTripper over an
// http.Client whose transport is base (go-cleanhttp's pooled client, its
// default, when base is nil).
//
// Equivalent configuration: RetryMax is c.Attempts-1 (its default is 4
// retries); with c.Base set, RetryWaitMin is c.Base and RetryWaitMax c.Cap,
// so that its DefaultBackoff waits c.Base, 2·c.Base, ... without jitter
// (otherwise 1 s, 2 s, ...). Its DefaultBackoff honours Retry-After on 429
// and 503. The logger is off (by default it writes a line per request to
// stderr), and ErrorHandler is PassthroughErrorHandler so that, like the
// others, it returns the last response rather than an error when retries
// run out.
func NewRetryableHTTP(base http.RoundTripper, c Config) http.RoundTripper {
	client := retryablehttp.NewClient()
	client.Logger = nil
	client.RetryMax = c.attempts() - 1
	client.ErrorHandler = retryablehttp.PassthroughErrorHandler
	if base == nil {
		base = OwnBase(RetryableHTTP, nil)
	}
	client.HTTPClient = &http.Client{Transport: base}
	if c.Base > 0 {
		client.RetryWaitMin = c.Base
		client.RetryWaitMax = c.cap()
	}
	return &retryablehttp.RoundTripper{Client: client}
}

// NewFailsafe returns failsafe-go's failsafehttp RoundTripper over base (a
// clone of http.DefaultTransport, its default, when base is nil) with the
// retry policy of failsafehttp.NewRetryPolicyBuilder, which retries 429,
// 5xx but 501, and errors, honouring Retry-After in seconds.
//
// Equivalent configuration: WithMaxAttempts(c.Attempts); with c.Base set,
// WithBackoff(c.Base, c.Cap), doubling without jitter (otherwise no delay,
// its default); ReturnLastFailure, so that it returns the last response
// rather than an ExceededError when retries run out. It has no budget.
func NewFailsafe(base http.RoundTripper, c Config) http.RoundTripper {
	return newFailsafe(base, c, false)
}

// NewFailsafeBudget is NewFailsafe with failsafe-go's optional retry budget,
// budget.New(): retries in flight may be at most 20% of executions in
// flight, with at least 3 allowed. A retry it refuses ends the request with
// budget.ErrExceeded.
func NewFailsafeBudget(base http.RoundTripper, c Config) http.RoundTripper {
	return newFailsafe(base, c, true)
}

// delays gives b c's delays: a constant c.Delay, or c.Base doubling up to
// c.Cap.
func delays(b retrypolicy.Builder[*http.Response], c Config) retrypolicy.Builder[*http.Response] {
	switch {
	case c.Delay > 0:
		return b.WithDelay(c.Delay)
	case c.Base > 0:
		return b.WithBackoff(c.Base, c.cap())
	}
	return b
}

func newFailsafe(base http.RoundTripper, c Config, withBudget bool) http.RoundTripper {
	if base == nil {
		base = OwnBase(Failsafe, nil)
	}
	b := delays(failsafehttp.NewRetryPolicyBuilder().WithMaxAttempts(c.attempts()).ReturnLastFailure(), c)
	if withBudget {
		b = b.WithBudget(budget.New())
	}
	return failsafehttp.NewRoundTripper(base, b.Build())
}
