// Package retryhttp provides an http.RoundTripper that retries failed HTTP
// requests when it is safe and worthwhile, and returns exactly what a plain
// transport would when it is not.
//
// Most callers want
//
//	client := &http.Client{Transport: retryhttp.New()}
//
// or, for an SDK that accepts a transport, retryhttp.New(retryhttp.WithBase(sdkTransport)).
// A Transport is immutable once made and safe for concurrent use, and the
// zero Transport works as New() does; share one per process (or per
// dependency), as with http.Transport, so that its connection pool and
// retry budget are shared too.
//
// # What it does by default
//
// It makes at most 3 attempts. It retries 408, 429 and 5xx but 501 and 505,
// and transport errors that may pass (a refused dial, a reset), never a TLS
// verification error. It retries only what may be sent twice: an idempotent
// method, a request with an Idempotency-Key, or one that provably never
// reached the server. It waits with capped exponential backoff and full
// jitter, at least as long as Retry-After asks, within a minute, and pays
// each retry from a per-host budget, so that a failing host sees about one
// request per request. When retries end, the caller gets the last attempt's
// result as the base returned it: the response, even a 503, or an *Error
// wrapping the last error; Attempts says how many times the server was
// sent the request. Each option's doc states its default.
//
// # Packages
//
// The root holds what most callers need: New and its options, the per-call
// controls, the errors and the events of the hooks. Each concept that
// stands on its own has a package:
//
//   - backoff: the delay before each retry (schedules and jitters)
//   - classify: which outcomes are retried; awsretry, githubretry and
//     googleretry read those vendors' errors
//   - budget: how many retries a client may spend, per host or in all
//   - hedge, throttle, resume, pace, stream: the options of hedging,
//     adaptive throttling, body resumption, pacing to a quota and event
//     streams, and what they report
//   - deadline: the formats a deadline travels in; server: the middleware
//     of a service that calls others (retry at one layer, incoming deadlines)
//   - base: for authors of the transport a Transport sends attempts through
//   - retryhttptest: servers and faults for testing your own retries
//
// # Guides
//
// The guides in the repository's docs folder take one topic each, with what
// was measured and the commands that reproduce it: [How each decision is
// made], [What is safe to resend], [What servers say about retrying], [Under
// an SDK], [Hedging], [Failing fast], [Budgets], [Retrying at one layer],
// [Deadlines across a chain], [Resuming response bodies], [Event streams],
// [Pacing to a quota], [Observability],
// [Testing your own retries], [Performance] and [against other Go retry
// libraries].
//
// [How each decision is made]: https://github.com/retryhttp/retryhttp/blob/main/docs/decisions.md
// [What is safe to resend]: https://github.com/retryhttp/retryhttp/blob/main/docs/resending.md
// [What servers say about retrying]: https://github.com/retryhttp/retryhttp/blob/main/docs/signals.md
// [Under an SDK]: https://github.com/retryhttp/retryhttp/blob/main/docs/sdk.md
// [Hedging]: https://github.com/retryhttp/retryhttp/blob/main/docs/hedging.md
// [Pacing to a quota]: https://github.com/retryhttp/retryhttp/blob/main/docs/pacing.md
// [Failing fast]: https://github.com/retryhttp/retryhttp/blob/main/docs/throttling.md
// [Budgets]: https://github.com/retryhttp/retryhttp/blob/main/docs/budgets.md
// [Retrying at one layer]: https://github.com/retryhttp/retryhttp/blob/main/docs/chains.md
// [Deadlines across a chain]: https://github.com/retryhttp/retryhttp/blob/main/docs/deadlines.md
// [Resuming response bodies]: https://github.com/retryhttp/retryhttp/blob/main/docs/resume.md
// [Event streams]: https://github.com/retryhttp/retryhttp/blob/main/docs/streams.md
// [Observability]: https://github.com/retryhttp/retryhttp/blob/main/docs/observability.md
// [Testing your own retries]: https://github.com/retryhttp/retryhttp/blob/main/docs/testing.md
// [Performance]: https://github.com/retryhttp/retryhttp/blob/main/docs/performance.md
// [against other Go retry libraries]: https://github.com/retryhttp/retryhttp/blob/main/docs/comparison.md
package retryhttp
