package throttle

import (
	"fmt"
	"math"
	"time"

	"github.com/retryhttp/retryhttp/internal/config"
)

// An Option changes how a Transport throttles; pass it to
// retryhttp.WithAdaptiveThrottling.
type Option func(*config.Throttle)

// Multiplier sets K: a host is sent up to K times as many requests as it
// accepted over the window before requests are refused. It must be a
// finite number of at least 1. The default is 2; a higher K refuses later
// and less.
func Multiplier(k float64) Option {
	if !(k >= 1) || math.IsInf(k, 1) {
		panic(fmt.Sprintf("throttle: Multiplier: must be a finite number of at least 1, got %v", k))
	}
	return func(c *config.Throttle) { c.Multiplier = k }
}

// Window sets how far back the outcomes of a host's requests count. It
// must be at least 100 ms. The default is 10 s. The window turns in 20
// steps, a twentieth of it at a time.
func Window(d time.Duration) Option {
	if d < 100*time.Millisecond {
		panic("throttle: Window: must be at least 100ms, got " + d.String())
	}
	return func(c *config.Throttle) { c.Window = d }
}

// MaxRejection sets the highest probability with which a request is
// refused. It must be in (0, 1): below 1, some requests always reach the
// host, and find out when it has healed. The default is 0.9.
func MaxRejection(p float64) Option {
	if !(p > 0 && p < 1) {
		panic(fmt.Sprintf("throttle: MaxRejection: must be in (0, 1), got %v", p))
	}
	return func(c *config.Throttle) { c.MaxRejection = p }
}

// MinRequests sets how many attempts and refusals of a host the window
// must hold before any request is refused, so that a few failures of a
// host seldom called refuse nothing. It must be at least 1. The default is
// 20.
func MinRequests(n int) Option {
	if n < 1 {
		panic(fmt.Sprintf("throttle: MinRequests: must be at least 1, got %d", n))
	}
	return func(c *config.Throttle) { c.MinRequests = n }
}

// A Rejection is the probability with which the requests to one
// destination are refused now, as retryhttp.Transport.Rejections yields
// it.
type Rejection struct {
	// Scheme is the destination's scheme, in lower case.
	Scheme string
	// Host is the destination's host in lower case, with its port unless
	// that is the scheme's default.
	Host string
	// Probability is the probability with which a request to the host is
	// refused now, from 0 to the highest allowed (MaxRejection).
	Probability float64
}
