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
//   - hedge, throttle, resume: the options of hedging, adaptive throttling
//     and body resumption, and what they report
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
// [Deadlines across a chain], [Resuming response bodies], [Observability],
// [Testing your own retries], [Performance] and [against other Go retry
// libraries].
//
// # What it returns
//
// When retries end, for any reason, the caller gets the last attempt's result
// as the base transport returned it: the response, even a 503, with its body
// unread and a nil error; or, when no response exists, an *Error that wraps
// the last error (errors.Is and errors.As see through it) and counts the
// attempts. Attempts reports how many times the request that produced a
// response was sent, as the server received it: its attempts, and the
// sends net/http made again on its own (see Observing retries).
//
// # Which outcomes are retried
//
// Each attempt's outcome is judged by a classify.Classifier, a list of small
// classifiers that each answer Retry, DontRetry or classify.Abstain. The default,
// classify.Default, retries 408, 429 and 5xx responses except 501, 505 and
// 511, a 421 Misdirected Request once, on a new connection (see Where a
// retry goes), and transport errors that are transient by type: refused or
// failed dials, connection resets, a connection closed mid-exchange, network
// timeouts (the base's own, such as ResponseHeaderTimeout, while the
// caller's context is alive), a proxy that refused the CONNECT with 502,
// 503 or 429 (a ProxyConnectError; never sent to the destination, so
// retried whatever the method), and HTTP/2 streams the server refused
// (REFUSED_STREAM) or aborted (INTERNAL_ERROR), read from the error's type,
// never its text. It never retries certificate or other TLS errors, a 425
// Too Early (net/http never sends TLS early data, so a retry would be the
// same request), a host that does not exist, errors it does not know (an
// unsupported scheme, an invalid header), or anything after the caller's own
// context is done. Before the status, it heeds what the server said about
// retrying (see below). Put your classifiers in front of it to change a case.
//
// # Which requests are retried
//
// A retry resends the request, so it must be safe to execute twice. GET,
// HEAD, OPTIONS, TRACE, PUT and DELETE are idempotent by definition. POST,
// PATCH and other methods are retried only when they carry an
// Idempotency-Key or X-Idempotency-Key header (a blank value is no key; an
// entry with no value at all, net/http's way to declare a request
// idempotent without sending the header, counts), when they are declared safe to
// resend (WithResendable for an API, Resendable for one call), or when the
// failure proves the request never reached the server: net/http asked for a
// connection for the attempt and obtained none (a refused dial, a connection
// reset during the TLS handshake), which net/http/httptrace shows on the
// goroutine of RoundTrip, before any byte is written, or an HTTP/2 server
// refused the stream; or when the server answered 421 Misdirected Request,
// which says that it did not process the request. Otherwise, once a
// connection was obtained the request may have run, and it is never
// resent: no hook that may fire late, no GOAWAY and no error text counts as
// proof. Such a request is also kept from net/http's own
// resends, which are stopped before they write anything (ErrResendStopped),
// but those that follow a send that provably never ran: over HTTP/1,
// net/http sends it again only when nothing of it was written to a reused
// connection; over HTTP/2, a resend on the connection of a stream the
// server refused (REFUSED_STREAM). These go out as through a plain
// transport. WithIdempotencyKeys gives
// key-less requests a random key, the same on every attempt. MaxAttempts
// changes the number of attempts for one call.
//
// The body must also be replayable: Request.GetBody is used when set (as
// http.NewRequest does for in-memory bodies); otherwise the body is copied,
// up to WithBodyBufferLimit, as the first attempt sends it (nothing is read
// ahead, so full-duplex bodies flow), and resent only once the copy is
// whole within the limit: an attempt that sent part of it (a server that
// answered before reading it all) has the copy finished from the caller's
// body, waiting at most a second for it, before the retry.
//
// # How long it waits
//
// The delay before retry n is the backoff's (package backoff): by default exponential from
// 50 ms, capped at 20 s, with full jitter (uniform in [0, cap)), so that
// clients failing together do not retry together. A throttled attempt (429,
// or 503 with Retry-After) uses the throttle backoff, from 1 s. A Retry-After
// header (or retry-after-ms, x-ms-retry-after-ms, or a classifier's
// Verdict.RetryAfter; the longest counts) is a floor on the delay; one longer
// than WithRetryAfterLimit, or one
// that would pass the request's deadline, is not waited for: the response is
// returned at once for the caller to act on. No wait ever passes the
// request's deadline, and cancelling the request ends a wait at once.
//
// # Deadlines
//
// A retry or a hedge of a request with a deadline is sent only if the time
// left once it is sent is at least what an answer from its host typically
// takes (the median of the host's recent times to response headers, once
// 20 are known) and at least 1 ms; otherwise the request is given up on,
// with GiveUpDeadline, before any budget token or connection is spent. A
// first attempt is always sent: its caller chose the deadline.
//
// WithDeadlineHeader sends, with each attempt, the time left before the
// request's deadline, as gRPC (grpc-timeout), Envoy
// (x-envoy-expected-rq-timeout-ms), Connect (Connect-Timeout-Ms) or a
// header of your own in milliseconds say it (package deadline names the
// formats); an attempt with less than 1 ms left is not sent. On the
// server, server.Handler with server.Deadline makes the deadline a caller
// sent the incoming request's, less a margin for the way back, never later
// than the server's own and at most a minute away; an expired request is
// answered 504 at once. A service whose
// Transports send the deadline on then passes what is left of it down a
// chain of services, each of which stops when its caller stops waiting.
//
// # How much it retries
//
// Retries are paid from a Budget: by default a budget.PerHost, one token bucket
// per scheme and host. A retry costs 5 tokens (10 after a timeout); a
// request that succeeds first time returns 1, and a retry that succeeds
// returns its cost. With 500 tokens a host that fails outright gets 100
// retries, then first attempts only: the dependency sees about one request
// per request instead of three, and retries resume as successes refill the
// bucket. Only healthy responses refill it (not 408, 429, 5xx, or a response
// marked X-Should-Retry: false), and a retry whose wait is cancelled gets its
// tokens back. The first attempt of a request is never refused. Module
// github.com/retryhttp/retryhttp/redisbudget shares the buckets of a fleet
// of processes through Redis.
//
// # What servers say about retrying
//
// A server can steer its clients' retries, and the default classifier
// listens:
//
//   - X-Should-Retry: false makes a response final even when its status is
//     retryable; true makes it retryable even when its status is not (still
//     within the idempotency rules, attempts and budget).
//     classify.ShouldRetry reads other header names too.
//   - For a request with an idempotency key, 409 Conflict (the first request
//     with that key is still in progress) is retried, paced like a throttled
//     response; 422 (the key was used with another payload) is final.
//   - A Retry-After date is measured against the response's Date header, so
//     a client whose clock is off still waits as long as the server asked.
//   - With WithRateLimitHints, the reset time of a rate limit whose quota is
//     spent (the RateLimit header's reset, or X-RateLimit-Reset) is a floor on
//     the delay after a throttled response, like Retry-After, under the same
//     limit.
//   - awsretry.Classifier, googleretry.Classifier and
//     githubretry.Classifier read those vendors' own throttling signals,
//     in their headers and, for AWS and Google, in their error documents;
//     put them in front of the default chain. A classifier reads a body only
//     through classify.Peek: at most 8 KiB, waited for at most 100 ms, and the
//     caller still gets every byte.
//
// WithAttemptHeader names every attempt ("2/3"), so servers and their logs
// can tell retries from first attempts.
//
// # Where a retry goes
//
// A 5xx may belong to the instance of a service that answered it. Behind a
// balancer that pins each connection to one instance (a Kubernetes Service,
// a network load balancer) a retry sent down the same connection meets the
// same instance; but a new connection costs the server a handshake. So a
// retry leaves its connection on evidence that the connection is to blame,
// as outlier detection does: it failed before it was seen serving a
// success, or failed 4 times in a row. A connection that serves and fails
// now and then is kept, and so are those of final and throttled responses
// (429, 503 with Retry-After). Once 3 connections to a host have been left
// with no success there since, the host is down, not one instance: its
// retries stay, but for a probe now and then. A base.Dialer, which the
// default base dials with, dials the addresses at which a request left its
// connection last when it retries it, and refuses a pooled connection to
// one of them. Over HTTP/2, concurrent retries share the one connection
// that replaces a connection left. Each attempt's peer address is in
// RetryEvent.Peer, GiveUpEvent.Peer and base.Peer.
//
// A 421 is retried once, on a new connection (see WithBase), over HTTP/2
// too; the default base's new connections resume TLS sessions.
//
// # Resuming response bodies
//
// A failure after the response headers, while the caller reads the body
// (the connection closed or reset, an HTTP/2 stream reset, bytes that stop
// coming), is where large downloads fail, and resending the request cannot
// rescue it: the caller has the response and part of its body. The
// Transport resumes such a body where that is provably safe: the response
// to a GET showed range support, a length and a strong validator. The
// caller's Read blocks while the Transport asks for the rest, pinned to that
// validator, checks that the answer continues the same bytes, and reads on;
// otherwise the read ends with a *resume.Error that says why. Each resume is
// a retry: backoff, budget, hooks, log. Resumption is on by default;
// WithResume configures it, WithoutResume turns it off for a Transport,
// NoResume and MaxAttempts(ctx, 1) for one call. Package resume has the model: which
// bodies are resumed, how the whole is checked, stalls.
//
// # Observing retries
//
// WithOnRetry sees each retry before its wait, and WithOnGiveUp each request
// whose last attempt failed in a way worth retrying but that was not retried,
// with a GiveUpReason: attempts or budget exhausted, not resendable, body not
// replayable, Retry-After or rate limit reset beyond the limit, deadline,
// the context done during the wait, the host throttled (no attempt sent),
// no new connection for a misdirected request (421), and, for a response
// body, not resumable or its resume limit reached. Each of these options
// adds a hook; several are called in order. A base transport reads each
// attempt's number with base.Attempt, and a gauge reads the budget with
// Transport.Budget and budget.PerHost.Balances. Module
// github.com/retryhttp/retryhttp/otelretry builds OpenTelemetry spans and
// metrics on these hooks.
//
// net/http sends a request again by itself when the connection it was
// written to failed before any answer; the server may have received both,
// so the Transport counts each (RetryEvent.BaseResend) where it sees them.
//
// WithLogger logs by slog's levels. INFO has what an operator acts on, at
// most one line a call: a call given up on because its attempts, its budget
// or its time ran out, its server asked for a longer wait than the limit,
// or its request body could not be sent again; a response body that could not be resumed or made whole; and
// adaptive throttling that starts or ends refusing a host's requests, once
// a change. A service logging at INFO sees nothing of a call its retries
// rescued, of a final answer such as a 404, or of a caller who gave up.
// DEBUG has each attempt and each decision: a retry and its delay, a
// resume, a hedge, an attempt not sent for lack of time, a refusal by
// adaptive throttling, and the give-ups that are no operator's concern.
// WithLogger lists the reasons of each level.
//
// # Retrying at one layer
//
// When every service in a chain retries, the retries multiply: three
// attempts in each of four layers send 81 calls to a failing fifth service.
// Wrap the handlers of services that call others through a Transport in
// package server's Handler: a response that fails because the service gave
// up on a dependency then carries X-Should-Retry: false, and the layers
// above do not retry it. Only the layer next to the failure retries. With
// server.Deadline it also carries the deadline down the chain (see
// Deadlines).
//
// # Hedging
//
// WithHedging sends another copy of a slow request, a hedge, when no attempt
// has had a response within a delay: by default the 95th percentile of the
// host's recent latency, so that only the tail is hedged and hedges stop by
// themselves when a host is slow for every request. Only requests that may
// be sent twice are hedged; each hedge is an attempt, is paid from the
// budget, and a host's hedges are capped at 5% of its requests. The first
// success or final response wins, and the other attempts are cancelled.
// NoHedge turns it off for one call; WithOnHedge sees each hedge. The
// options of package hedge change the delay and the cap.
//
// # Failing fast when a host is down
//
// WithAdaptiveThrottling refuses, without sending them, a share of the
// requests to a host that has been failing, as the outcomes of its recent
// requests show (the client-side throttling of Google's SRE book): a
// refused request fails at once with an error wrapping ErrThrottled. A
// request that its retries rescued counts for its host, so a host whose
// requests all end in success is refused nothing. Probes always get
// through, and the host is trusted again as soon as a few requests in a
// row succeed. Package throttle explains the model, and its options change
// it.
//
// # Testing retries
//
// Package github.com/retryhttp/retryhttp/retryhttptest provides local servers, and
// an in-memory transport for testing/synctest, that fail on purpose (a 503, a
// Retry-After, a reset after the handler ran, a hang, a truncated body, a
// body closed, reset or stalled after n bytes) and record each request's
// attempts and executions, so that tests can prove how their clients retry
// and resume.
//
// # Defaults
//
//	Setting            Default                                            Option
//	attempts           3 (the first included)                             WithMaxAttempts
//	backoff            exponential from 50 ms, x2, cap 20 s, full jitter  WithBackoff
//	throttle backoff   exponential from 1 s, x2, cap 20 s, full jitter    WithThrottleBackoff
//	Retry-After limit  1 minute                                           WithRetryAfterLimit
//	budget             per scheme and host, the 1024 last used:           WithBudget, WithoutBudget
//	                   500 tokens; a retry costs 5, 10 after a
//	                   timeout; a first-attempt success refunds 1,
//	                   a successful retry its cost
//	attempt timeout    none                                               WithAttemptTimeout
//	body copy          1 MiB                                              WithBodyBufferLimit
//	idempotency keys   off                                                WithIdempotencyKeys
//	attempt header     none                                               WithAttemptHeader
//	rate limit hints   ignored                                            WithRateLimitHints
//	deadline headers   none sent                                          WithDeadlineHeader
//	time for a retry   the host's median answer time (once 20 are         (none)
//	or a hedge         known), at least 1 ms, left once it is sent
//	hedging            off; when on: after the host's p95 latency         WithHedging, NoHedge
//	                   (>= 1 ms, once 100 are known), at most 5% of a
//	                   host's requests, paid from the budget
//	adaptive throttle  off; when on: per host over 10 s, K = 2, at most   WithAdaptiveThrottling
//	                   90% refused, none before 20 requests
//	resendable         idempotent methods and keyed requests only         WithResendable, Resendable
//	body resumption    on, where provably safe; at most 10 resumes        WithResume, WithoutResume,
//	                   per body; a stall after 10 s without a byte        NoResume
//	classifier         classify.Default()                                WithClassifier
//	base transport     go-cleanhttp's pooled transport, TLS resumed       WithBase
//
// Three attempts recover most transient failures while bounding the load a
// request can cause; the budget bounds it further when failures are not
// transient. 50 ms is long enough for a dropped connection or a restarting
// instance behind a load balancer, short enough that a retried call still
// looks like a call. 20 s caps the wait where a caller is better served by
// an error. A server that throttles has asked for less traffic, so its
// retries start at 1 s. One minute bounds how long a Retry-After can hold a
// request; past that, scheduling the work again is the caller's decision.
// 1 MiB covers nearly all API request bodies while bounding the memory a
// request in flight can hold. An attempt given less time than its host's
// median answer is more likely cut off than answered. Packages server and
// resume give the reasons of their defaults.
//
// [How each decision is made]: https://github.com/retryhttp/retryhttp/blob/main/docs/decisions.md
// [What is safe to resend]: https://github.com/retryhttp/retryhttp/blob/main/docs/resending.md
// [What servers say about retrying]: https://github.com/retryhttp/retryhttp/blob/main/docs/signals.md
// [Under an SDK]: https://github.com/retryhttp/retryhttp/blob/main/docs/sdk.md
// [Hedging]: https://github.com/retryhttp/retryhttp/blob/main/docs/hedging.md
// [Failing fast]: https://github.com/retryhttp/retryhttp/blob/main/docs/throttling.md
// [Budgets]: https://github.com/retryhttp/retryhttp/blob/main/docs/budgets.md
// [Retrying at one layer]: https://github.com/retryhttp/retryhttp/blob/main/docs/chains.md
// [Deadlines across a chain]: https://github.com/retryhttp/retryhttp/blob/main/docs/deadlines.md
// [Resuming response bodies]: https://github.com/retryhttp/retryhttp/blob/main/docs/resume.md
// [Observability]: https://github.com/retryhttp/retryhttp/blob/main/docs/observability.md
// [Testing your own retries]: https://github.com/retryhttp/retryhttp/blob/main/docs/testing.md
// [Performance]: https://github.com/retryhttp/retryhttp/blob/main/docs/performance.md
// [against other Go retry libraries]: https://github.com/retryhttp/retryhttp/blob/main/docs/comparison.md
package retryhttp
