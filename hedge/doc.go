// Package hedge configures hedging: when a request is slow, not failed, a
// retryhttp Transport sends another copy of it, a hedge, and returns
// whichever response comes first, so that one slow server does not hold its
// caller up.
//
// Hedging is off by default. retryhttp.WithHedging turns it on, and the
// options of this package change how:
//
//	retryhttp.New(retryhttp.WithHedging())                     // the defaults below
//	retryhttp.New(retryhttp.WithHedging(hedge.Quantile(0.99))) // fewer hedges, later
//
// # The delay
//
// A request is hedged when no attempt has had a response within a delay:
// by default the 95th percentile of the host's recent time to response
// headers (Quantile), at least 1 ms (MinDelay), and only once 100 latencies
// of the host are known (MinSamples), since a quantile of fewer is noise.
// A quantile follows the host: only the slowest few requests are hedged
// whether the host answers in 1 ms or in 1 s, where a fixed delay (Delay)
// shorter than the usual latency hedges nearly every request, and one
// longer than the tail hedges none. When a host turns slow for every
// request its quantile rises with it, and hedges stop. The quantile is of
// the host's last one or two windows of 1000 latencies (Samples), so it
// follows a change of the host within two windows.
//
// # The cap
//
// A host's hedges are capped at 5% of its requests (MaxFraction), so that
// a server slow for every request gets at most 5% more of them rather than
// twice as many. At the 95th percentile about one request in twenty passes
// the delay in steady state, which the cap allows: the quantile, not the
// cap, picks which requests are hedged. The cap is a token bucket: each
// request that may be hedged earns its host the fraction of a hedge, and a
// host saves at most 10 hedges. The hedges a host has saved go to its
// slowest requests: when fewer than half are left, a hedge waits one more
// delay, so that requests only a little late answer first; and when the
// host has answered nothing for a whole delay while three of its requests
// passed the delay, every request is late together, a pause of the client
// or the server, and no more are sent until it answers.
//
// # What the Transport does
//
// Only a request that may be sent twice is hedged, each hedge counts as an
// attempt and is paid from the retry budget, and the first response that
// is a success or final wins while the others are cancelled, or left to
// answer when a cancel would close their HTTP/1 connection: see
// retryhttp.WithHedging. retryhttp.NoHedge turns hedging off for one call,
// and retryhttp.WithOnHedge sees each hedge. The guide [Hedging: cutting
// the tail] measures all this against another library's hedging.
//
// Latencies and hedge credit are kept for at most 1024 hosts (about 1.7 KiB
// each): a new host takes the place of the host least recently requested,
// which starts afresh, as a new host does, if it is requested again.
//
// [Hedging: cutting the tail]: https://github.com/retryhttp/retryhttp/blob/main/docs/hedging.md
package hedge
