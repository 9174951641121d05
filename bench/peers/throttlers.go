package peers

import (
	"errors"
	"net/http"
	"time"

	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/adaptivethrottler"
	"github.com/failsafe-go/failsafe-go/circuitbreaker"
	"github.com/failsafe-go/failsafe-go/failsafehttp"
	"github.com/failsafe-go/failsafe-go/timeout"
	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/throttle"
)

// Names of the libraries that refuse requests to a failing host, as they
// appear in the throttling tables.
const (
	RetryHTTPThrottling = "retryhttp + throttling"
	FailsafeThrottler   = "failsafe-go + adaptivethrottler"
	FailsafeBreaker     = "failsafe-go + circuit breaker"
)

// Throttlers returns retryhttp without throttling, retryhttp with adaptive
// throttling, and failsafe-go's retry policy composed with its adaptive
// throttler and with its circuit breaker, in table order.
func Throttlers() []Library {
	return []Library{
		{RetryHTTP, NewRetryHTTP},
		{RetryHTTPThrottling, NewRetryHTTPThrottling},
		{FailsafeThrottler, NewFailsafeThrottler},
		{FailsafeBreaker, NewFailsafeBreaker},
	}
}

// NewRetryHTTPThrottling is NewRetryHTTP with
// retryhttp.WithAdaptiveThrottling() at its defaults.
func NewRetryHTTPThrottling(base http.RoundTripper, c Config) http.RoundTripper {
	return newRetryHTTP(base, c, retryhttp.WithAdaptiveThrottling())
}

// RetryHTTPShared returns retryhttp with adaptive throttling at its
// defaults that shares its counts with the other processes of a fleet
// through store (throttle.Shared), named name in tables.
func RetryHTTPShared(name string, store throttle.Store) Library {
	return Library{name, func(base http.RoundTripper, c Config) http.RoundTripper {
		return newRetryHTTP(base, c, retryhttp.WithAdaptiveThrottling(throttle.Shared(store)))
	}}
}

// failure is what failsafe-go's throttler and breaker count as a failure:
// an error, a 429 or a 5xx, as the retry policy retries them.
func failure(resp *http.Response, err error) bool {
	return err != nil || resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500
}

// NewFailsafeThrottler returns failsafe-go's retry policy (as NewFailsafe)
// around its adaptive throttler at its defaults (failure rate threshold
// 0.1 over one minute, rejection at most 0.9), counting errors, 429 and
// 5xx as failures, so that every attempt passes the throttler. The retry
// policy does not retry the throttler's refusal (adaptivethrottler.ErrExceeded):
// a refused request fails at once, as retryhttp's does.
func NewFailsafeThrottler(base http.RoundTripper, c Config) http.RoundTripper {
	t := adaptivethrottler.NewBuilder[*http.Response]().HandleIf(failure).Build()
	return newFailsafeGuarded(base, c, t, adaptivethrottler.ErrExceeded)
}

// NewFailsafeBreaker returns failsafe-go's retry policy (as NewFailsafe)
// around its circuit breaker, opening when 5 of the last 10 attempts
// failed (errors, 429 and 5xx) and staying open for 1 s before it lets a
// trial attempt through. The retry policy does not retry the breaker's
// refusal (circuitbreaker.ErrOpen).
func NewFailsafeBreaker(base http.RoundTripper, c Config) http.RoundTripper {
	b := circuitbreaker.NewBuilder[*http.Response]().HandleIf(failure).
		WithFailureThresholdRatio(5, 10).WithDelay(time.Second).Build()
	return newFailsafeGuarded(base, c, b, circuitbreaker.ErrOpen)
}

// newFailsafeGuarded composes failsafe-go's retry policy, guard, and, with
// c.AttemptTimeout set, a timeout on each attempt, outermost first.
func newFailsafeGuarded(base http.RoundTripper, c Config, guard failsafe.Policy[*http.Response], refused error) http.RoundTripper {
	if base == nil {
		base = OwnBase(Failsafe, nil)
	}
	b := delays(failsafehttp.NewRetryPolicyBuilder().WithMaxAttempts(c.attempts()).ReturnLastFailure().AbortOnErrors(refused), c)
	policies := []failsafe.Policy[*http.Response]{b.Build(), guard}
	if c.AttemptTimeout > 0 {
		policies = append(policies, timeout.New[*http.Response](c.AttemptTimeout))
	}
	return failsafehttp.NewRoundTripper(base, policies...)
}

// Refused reports whether err is the refusal of a throttler or breaker:
// retryhttp.ErrThrottled, adaptivethrottler.ErrExceeded or
// circuitbreaker.ErrOpen.
func Refused(err error) bool {
	return errors.Is(err, retryhttp.ErrThrottled) || errors.Is(err, adaptivethrottler.ErrExceeded) ||
		errors.Is(err, circuitbreaker.ErrOpen)
}
