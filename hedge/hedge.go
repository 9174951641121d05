package hedge

import (
	"fmt"
	"time"

	"github.com/retryhttp/retryhttp/internal/config"
)

// An Option changes how a Transport hedges; pass it to
// retryhttp.WithHedging.
type Option func(*config.Hedge)

// Delay hedges after a fixed delay instead of a quantile of the host's
// latency. It must be positive. A fixed delay shorter than a host's usual
// latency hedges most requests, up to the cap; prefer the quantile.
func Delay(d time.Duration) Option {
	if d <= 0 {
		panic("hedge: Delay: must be positive, got " + d.String())
	}
	return func(c *config.Hedge) { c.Delay = d }
}

// Quantile sets the quantile of the host's recent latency (time to
// response headers) after which a request is hedged. It must be in (0, 1).
// The default is 0.95: in steady state about one request in twenty passes
// the delay, which the 5% cap (MaxFraction) allows, so the quantile, not
// the cap, picks which requests are hedged. A higher quantile hedges fewer
// requests, later; a lower one asks for more hedges than the cap allows,
// and the cap then refuses them first come, first refused, slow or not.
func Quantile(q float64) Option {
	if !(q > 0 && q < 1) {
		panic(fmt.Sprintf("hedge: Quantile: must be in (0, 1), got %v", q))
	}
	return func(c *config.Hedge) { c.Quantile = q }
}

// MinDelay sets the shortest delay before a hedge, whatever the quantile
// says. It must not be negative. The default is 1 ms.
func MinDelay(d time.Duration) Option {
	if d < 0 {
		panic("hedge: MinDelay: must not be negative, got " + d.String())
	}
	return func(c *config.Hedge) { c.MinDelay = d }
}

// MinSamples sets how many latencies of a host must be known before its
// requests are hedged on a quantile. It must be at least 1. The default is
// 100: a 95th percentile of fewer is noise.
func MinSamples(n int) Option {
	if n < 1 {
		panic(fmt.Sprintf("hedge: MinSamples: must be at least 1, got %d", n))
	}
	return func(c *config.Hedge) { c.MinSamples = n }
}

// MaxFraction caps a host's hedges at a fraction of its requests. It must
// be in (0, 1]. The default is 0.05, so that a server slow for every
// request gets at most 5% more of them rather than twice as many. The cap
// is a token bucket: each request that may be hedged earns its host the
// fraction of a hedge, and a host saves at most 10 hedges, so over any run
// of requests its hedges are at most the fraction of them plus 10.
func MaxFraction(f float64) Option {
	if !(f > 0 && f <= 1) {
		panic(fmt.Sprintf("hedge: MaxFraction: must be in (0, 1], got %v", f))
	}
	return func(c *config.Hedge) { c.MaxFraction = f }
}

// Samples sets how many latencies of a host a window holds; the quantile
// covers the last one or two windows, so it follows a change in the host's
// latency within two windows. It must be in [2, 2^30]. The default is 1000.
func Samples(n int) Option {
	if n < 2 || n > 1<<30 {
		panic(fmt.Sprintf("hedge: Samples: must be in [2, 2^30], got %d", n))
	}
	return func(c *config.Hedge) { c.Samples = n }
}
