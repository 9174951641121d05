package config

import "time"

// Throttle configures adaptive throttling: what
// retryhttp.WithAdaptiveThrottling starts from, and what each
// throttle.Option changes.
type Throttle struct {
	// Multiplier is K: a host is sent up to K times as many requests as it
	// accepted over the window before requests are refused.
	Multiplier float64
	// Window is how far back the outcomes of a host's requests count.
	Window time.Duration
	// MaxRejection is the highest probability with which a request is
	// refused.
	MaxRejection float64
	// MinRequests is how many attempts and refusals of a host the window
	// must hold before any request is refused.
	MinRequests int
	// Store, if not nil, is the throttle.Store that shares the counts
	// with other processes (package throttle imports this one).
	Store any
}
