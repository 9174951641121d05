// Package otelretry makes a retryhttp Transport observable with
// OpenTelemetry: a client span for every attempt, as the HTTP semantic
// conventions ask of a client that resends, the decisions between attempts
// as span events, and metrics of attempts, retries, give-ups, retry delays
// and the retry budget.
//
// Most callers want
//
//	client := &http.Client{Transport: retryhttp.New(
//		otelretry.Instrument(base), // base: nil for retryhttp's default
//		retryhttp.WithMaxAttempts(4), // any other retryhttp options
//	)}
//
// The guide [Observability and OpenTelemetry] says what retryhttp reports
// without OpenTelemetry, and what this module adds.
//
// Instrument takes the tracer and meter providers with WithTracerProvider
// and WithMeterProvider, and the global ones by default, as otelhttp does.
// It is a module of its own, so that users of retryhttp who do not want
// OpenTelemetry never download it.
//
// # Spans
//
// Instrument puts otelhttp's Transport under retryhttp, so that otelhttp
// makes one client span per attempt, with the semantic conventions'
// attributes (http.request.method, url.full, server.address, server.port,
// http.response.status_code, error.type) and span status, and, with the
// propagators, injects each attempt's own span context into its headers. Under otelhttp a layer reads
// the attempt's number (base.Attempt) and gives every resend
// the attribute http.request.resend_count: 1 on the first retry, 2 on the
// second. When the base is an *http.Transport (the default), the layer
// also gives each attempt's span network.peer.address and network.peer.port,
// the remote address of the connection that carried it
// (base.Peer), so that a retry that left a failing instance
// shows it; and, when the Transport sends the request's deadline
// (retryhttp.WithDeadlineHeader), retryhttp.deadline.sent, the time left the
// attempt carried to the server, in seconds (deadline.Sent). There is no span
// around the whole call: the conventions ask for none. The attempt spans are children of the span in the request's
// context, if any; without one, each attempt is a trace of its own, as the
// conventions' examples show.
//
// As otelhttp does, an attempt's span ends when its response body is closed:
// retryhttp closes the bodies of the attempts it retries, and the caller the
// last one. An attempt that fails without a response ends at once.
//
// # Events
//
// The decisions after a failed attempt are events on the span in the
// request's context, the caller's span for the logical operation (a server
// handler's span, or one of the caller's own), where they lie between the
// attempt spans they separate. Without a recording span there, the
// decisions are in the metrics only.
//
//	retryhttp.retry    a retry is about to wait: retryhttp.attempt (the
//	                   failed attempt's number), retryhttp.retry.delay
//	                   (seconds), http.response.status_code or error.type,
//	                   retryhttp.verdict.throttle, retryhttp.verdict.timeout,
//	                   retryhttp.verdict.retry_after (seconds) when the
//	                   classifier read a least delay, and
//	                   retryhttp.deadline.time_left (seconds) when the
//	                   request has a deadline: the time the retry will
//	                   have left once sent
//	retryhttp.give_up  a failure worth retrying was not retried:
//	                   retryhttp.attempt (the last attempt's number),
//	                   retryhttp.give_up.reason, http.response.status_code
//	                   or error.type, and the verdict's facets; for
//	                   reason deadline, retryhttp.deadline.time_left
//	                   (seconds) and retryhttp.deadline.host_latency (the
//	                   host's typical answer time, seconds, once 20 answers
//	                   are known)
//	retryhttp.hedge    a hedge is about to be sent (retryhttp.WithHedging):
//	                   retryhttp.attempt (the hedge's number, 2 or more),
//	                   retryhttp.retry.delay (how long the first attempt
//	                   had waited, seconds); the hedge's own span has
//	                   http.request.resend_count its number less one
//	retryhttp.resume   a response body failed after its headers and the
//	                   rest is about to be asked for: the attributes of
//	                   retryhttp.retry, and retryhttp.resume.offset (the
//	                   bytes the caller had); the request for the rest is an
//	                   attempt with a span of its own, a resend
//	retryhttp.base_resend
//	                   the base transport sent an attempt again on its own
//	                   (net/http, after the connection it was written to
//	                   failed before any answer: retryhttp.RetryEvent's
//	                   BaseResend): retryhttp.attempt (the attempt's
//	                   number), network.peer.address and network.peer.port
//	                   (the connection that failed); the second send is
//	                   within the attempt's span, and no retry
//
// A give_up event of a body that failed after its headers has
// retryhttp.resume (true) and retryhttp.resume.offset too. The events of a
// body come while the caller reads it, after RoundTrip returned: they are
// recorded if the caller's span is still open then.
//
// A failure that the classifier does not retry (a 404, a TLS error) is
// final, not given up on, and has no event: its span says what happened.
//
// # Metrics
//
// The instruments, in the scope ScopeName. HTTP has no retry metrics in the
// semantic conventions, so they follow gRPC's (proposal A96) in spirit and
// the conventions in style: a namespace of their own, units in UCUM,
// attributes from the conventions where one exists.
//
//	retryhttp.client.attempts     Counter    {attempt}  attempts sent through
//	                                                    the base, first ones
//	                                                    included, and the
//	                                                    base's own resends
//	retryhttp.client.retries      Counter    {retry}    retries decided, before
//	                                                    their wait
//	retryhttp.client.give_ups     Counter    {give_up}  failures worth retrying
//	                                                    that were not retried
//	retryhttp.client.hedges       Counter    {hedge}    hedges sent
//	retryhttp.client.retry.delay  Histogram  s          the wait before each
//	                                                    retry
//	retryhttp.budget.balance      Gauge      {token}    tokens left in the
//	                                                    retry budget
//	                              (asynchronous)
//	retryhttp.client.throttled    Counter    {request}  requests refused by
//	                                                    adaptive throttling
//	retryhttp.throttle.rejection_probability
//	                              Gauge      1          probability of refusal
//	                              (asynchronous)        per host
//	retryhttp.client.pace.wait    Histogram  s          the wait of an attempt
//	                                                    for its turn to a
//	                                                    paced host
//	retryhttp.pace.hosts          Gauge      {host}     hosts paced
//	                              (asynchronous)
//
// Their attributes:
//
//	attempts     http.request.method, server.address, server.port, and
//	             retryhttp.base_resend (true) for a send the base made
//	             again on its own
//	retries      http.request.method, server.address, server.port,
//	             error.type, retryhttp.verdict.throttle,
//	             retryhttp.verdict.timeout, and retryhttp.resume (true)
//	             for a resume of a response body
//	give_ups     http.request.method, server.address, server.port,
//	             error.type, retryhttp.give_up.reason, and
//	             retryhttp.resume (true) for a response body
//	hedges       http.request.method, server.address, server.port
//	retry.delay  http.request.method, server.address, server.port,
//	             retryhttp.verdict.throttle
//	balance      url.scheme, server.address, server.port, for each host
//	             with a bucket in a budget.PerHost; none for a
//	             budget.Bucket
//	throttled    http.request.method, server.address, server.port
//	pace.wait    http.request.method, server.address, server.port
//	pace.hosts   none
//	rejection_probability
//	             url.scheme, server.address, server.port, for each host
//	             that retryhttp.WithAdaptiveThrottling counts (those that
//	             failed within its window, at most 1024)
//
// http.request.method is the method if the conventions know it and _OTHER if
// not. error.type is the failed attempt's status code ("503"), or the type
// of its error as the conventions name it ("*net.OpError"), as otelhttp sets
// it on the span; a request not sent for lack of time
// (retryhttp.ErrNoTimeLeft) has "timeout", the conventions' value for it.
// retryhttp.give_up.reason is one of attempts_exhausted, budget_exhausted,
// not_resendable, body_not_replayable, retry_after_limit,
// rate_limit_reset_limit, deadline, canceled, throttled, not_resumable,
// resume_limit, misdirected and paced (see ReasonValue and
// retryhttp.GiveUpReason). A request refused by adaptive throttling is
// counted both in give_ups, with reason throttled and error.type
// *errors.errorString, and in throttled; a retry it refused, in give_ups
// only, with the last attempt's error.type.
//
// The retry delay histogram's buckets are the conventions' HTTP duration
// buckets extended to 60 s, the default Retry-After limit. Unlike gRPC's
// grpc.client.call.retry_delay, which sums the waits of a call, it records
// each wait.
//
// The budget gauge reads the Transport's own budget (Transport.Budget) when
// it is collected, without a lock: a per-host budget reports at most its
// budget.MaxHosts hosts (1024 by default), so its cardinality is bounded;
// hosts that never retried have no bucket and no point; the gauge has no
// point until the Transport's first request. Transports that share a budget
// report it each.
//
// Cardinality: server.address and server.port are those of the request's
// URL, as on otelhttp's own metrics. A client that calls unboundedly many
// hosts has unboundedly many series here as there.
//
// # Cost
//
// A request that succeeds at once costs what otelhttp costs and little
// more: the attempt counter's attributes are cached per method and
// destination (up to 256), so counting allocates nothing. The hooks run
// only after a failure. The README in this folder has the figures.
//
// [Observability and OpenTelemetry]: https://github.com/retryhttp/retryhttp/blob/main/docs/observability.md
package otelretry
