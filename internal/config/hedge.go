package config

import "time"

// Hedge configures hedging: what retryhttp.WithHedging starts from, and
// what each hedge.Option changes.
type Hedge struct {
	// Delay is a fixed delay before a hedge; 0 hedges after Quantile.
	Delay time.Duration
	// Quantile is the quantile of the host's recent latency after which a
	// request is hedged.
	Quantile float64
	// MinDelay is the shortest delay before a hedge.
	MinDelay time.Duration
	// MinSamples is how many latencies of a host must be known before its
	// requests are hedged on a quantile.
	MinSamples int
	// MaxFraction caps a host's hedges at this fraction of its requests.
	MaxFraction float64
	// Samples is how many latencies of a host a window holds.
	Samples int
}
