// Package peers builds retryhttp and the libraries it is compared with as
// http.RoundTrippers over a given base transport, each configured as close
// to the others as its API allows.
//
// Every library gets the same attempt limit (3 by default, the first
// included) and, when Config.Base is set, the same base delay in its own
// backoff shape. Where a library cannot express something (Retry-After,
// idempotency, a retry budget), it is left to do what it does.
package peers

import (
	"net/http"
	"time"
)

// Names of the libraries, as they appear in tables.
const (
	Plain     = "plain"
	Naive     = "naive"
	RetryHTTP = "retryhttp"
	// RetryHTTPHedging is retryhttp with WithHedging(), which is not part
	// of its default configuration.
	RetryHTTPHedging = "retryhttp + hedging"
	// RetryHTTPPacing is retryhttp with WithPacing(), which is not part
	// of its default configuration.
	RetryHTTPPacing = "retryhttp + pacing"
	RetryableHTTP   = "go-retryablehttp"
	AWS             = "aws-sdk-go-v2 retry"
	Failsafe        = "failsafe-go"
	// FailsafeBudget is failsafe-go with its optional retry budget
	// (budget.New()), which is not part of its default configuration.
	FailsafeBudget = "failsafe-go + budget"
)

// A Config is what every library is asked to do.
type Config struct {
	// Attempts is the number of attempts, the first included. 0 means 3.
	Attempts int
	// Base is the delay before the first retry, doubling for each retry
	// after it, in each library's own shape (with or without jitter). Zero
	// keeps each library's own default delays.
	Base time.Duration
	// Cap bounds the delay when Base is set. 0 means one second.
	Cap time.Duration
	// Delay, when set, is a constant delay before every retry in place
	// of Base, in the rows that use it: retryhttp (backoff.Constant, as
	// both its backoffs) and failsafe-go (WithDelay). The others do not.
	Delay time.Duration
	// NoBudget turns off the retry budgets of the libraries that have one
	// by default (retryhttp and the AWS SDK), to isolate their backoff.
	NoBudget bool
	// AttemptTimeout bounds each attempt, where a scenario sets it: in
	// retryhttp WithAttemptTimeout, in failsafe-go's throttling rows a
	// timeout policy inside the throttler or breaker. The other rows do
	// not use it.
	AttemptTimeout time.Duration
}

func (c Config) attempts() int {
	if c.Attempts == 0 {
		return 3
	}
	return c.Attempts
}

func (c Config) cap() time.Duration {
	if c.Cap == 0 {
		return time.Second
	}
	return c.Cap
}

// A Library makes a retrying RoundTripper over base.
type Library struct {
	Name string
	New  func(base http.RoundTripper, c Config) http.RoundTripper
}

// All returns plain, naive, retryhttp and the three peers, in table order.
func All() []Library {
	return []Library{
		{Plain, NewPlain},
		{Naive, NewNaive},
		{RetryHTTP, NewRetryHTTP},
		{RetryableHTTP, NewRetryableHTTP},
		{AWS, NewAWS},
		{Failsafe, NewFailsafe},
	}
}

// WithBudgets returns All followed by failsafe-go with its optional budget,
// for the scenarios where a retry budget is what is being measured.
func WithBudgets() []Library {
	return append(All(), Library{FailsafeBudget, NewFailsafeBudget})
}

// ByName returns the library called name among WithBudgets.
func ByName(name string) (Library, bool) {
	for _, l := range WithBudgets() {
		if l.Name == name {
			return l, true
		}
	}
	return Library{}, false
}

// NewPlain returns base itself, one attempt per request (a clone of
// http.DefaultTransport when base is nil).
func NewPlain(base http.RoundTripper, _ Config) http.RoundTripper {
	if base == nil {
		return OwnBase(Plain, nil)
	}
	return base
}

// NewBase returns a transport like http.DefaultTransport, without a proxy
// and with room for 128 idle connections per host, so that pooling does not
// limit connection reuse at the concurrencies the scenarios use. Every
// library in a scenario gets a fresh one.
func NewBase() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil
	t.MaxIdleConns = 256
	t.MaxIdleConnsPerHost = 128
	return t
}
