package otelretry

import (
	"context"
	"maps"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/budget"
)

// Instrument names, as the package documentation lists them.
const (
	AttemptsName   = "retryhttp.client.attempts"
	RetriesName    = "retryhttp.client.retries"
	GiveUpsName    = "retryhttp.client.give_ups"
	RetryDelayName = "retryhttp.client.retry.delay"
	BalanceName    = "retryhttp.budget.balance"
	HedgesName     = "retryhttp.client.hedges"
	ThrottledName  = "retryhttp.client.throttled"
	RejectionName  = "retryhttp.throttle.rejection_probability"
	// PaceWaitName is the histogram of the waits of attempts for their
	// turn to a paced host (retryhttp.WithPacing).
	PaceWaitName = "retryhttp.client.pace.wait"
	// PacedHostsName is the gauge of the hosts paced.
	PacedHostsName = "retryhttp.pace.hosts"
)

// Span event names.
const (
	RetryEventName  = "retryhttp.retry"
	GiveUpEventName = "retryhttp.give_up"
	HedgeEventName  = "retryhttp.hedge"
	// ResumeEventName is the event of a retry that resumes a response
	// body: a request for the rest of a body that failed after its headers
	// (retryhttp.RetryEvent.Resume).
	ResumeEventName = "retryhttp.resume"
	// BaseResendEventName is the event of a send that the base transport
	// made again on its own, within one attempt and its span
	// (retryhttp.RetryEvent.BaseResend).
	BaseResendEventName = "retryhttp.base_resend"
)

// Attribute keys of this package, beside the semantic conventions' ones.
const (
	// AttemptKey is the number of the attempt an event judges, 1 for the
	// first.
	AttemptKey = attribute.Key("retryhttp.attempt")
	// DelayKey is the wait before the retry, in seconds.
	DelayKey = attribute.Key("retryhttp.retry.delay")
	// ThrottleKey is the verdict's throttle facet: the server asked the
	// client to slow down (429, or 503 with Retry-After).
	ThrottleKey = attribute.Key("retryhttp.verdict.throttle")
	// TimeoutKey is the verdict's timeout facet: the attempt timed out.
	TimeoutKey = attribute.Key("retryhttp.verdict.timeout")
	// RetryAfterKey is the least delay the classifier read from the
	// response (Verdict.RetryAfter), in seconds, when it read one.
	RetryAfterKey = attribute.Key("retryhttp.verdict.retry_after")
	// ReasonKey is why a request was given up on; ReasonValue lists its
	// values.
	ReasonKey = attribute.Key("retryhttp.give_up.reason")
	// DeadlineSentKey is the time left before the request's deadline that
	// an attempt carried in its deadline headers
	// (retryhttp.WithDeadlineHeader), in seconds, on the attempt's span.
	DeadlineSentKey = attribute.Key("retryhttp.deadline.sent")
	// TimeLeftKey is the time left before the request's deadline, in
	// seconds: on a retry event, when the retry will be sent, after its
	// delay; on a give-up event for lack of time (reason deadline), when
	// the Transport gave up.
	TimeLeftKey = attribute.Key("retryhttp.deadline.time_left")
	// HostLatencyKey is, on a give-up event for lack of time, the host's
	// typical answer time that the retry lacked (the median of its recent
	// times to response headers), in seconds, when enough are known.
	HostLatencyKey = attribute.Key("retryhttp.deadline.host_latency")
	// ResumeKey marks a retry, or a give-up, of a response body that
	// failed after its headers: true, and absent for requests.
	ResumeKey = attribute.Key("retryhttp.resume")
	// OffsetKey is, on the event of a resume or of a body given up on, how
	// many bytes of the body the caller had received.
	OffsetKey = attribute.Key("retryhttp.resume.offset")
	// BaseResendKey marks, on the attempt counter, a send that the base
	// transport made again on its own: true, and absent for attempts.
	BaseResendKey = attribute.Key("retryhttp.base_resend")
)

// ReasonValue returns the value of the retryhttp.give_up.reason attribute
// for r: attempts_exhausted, budget_exhausted, not_resendable,
// body_not_replayable, retry_after_limit, rate_limit_reset_limit, deadline,
// canceled, throttled, not_resumable, resume_limit, misdirected, paced, or _OTHER
// for a reason this version does not know.
func ReasonValue(r retryhttp.GiveUpReason) string {
	switch r {
	case retryhttp.GiveUpAttemptsExhausted:
		return "attempts_exhausted"
	case retryhttp.GiveUpBudgetExhausted:
		return "budget_exhausted"
	case retryhttp.GiveUpNotResendable:
		return "not_resendable"
	case retryhttp.GiveUpBodyNotReplayable:
		return "body_not_replayable"
	case retryhttp.GiveUpRetryAfterLimit:
		return "retry_after_limit"
	case retryhttp.GiveUpRateLimitResetLimit:
		return "rate_limit_reset_limit"
	case retryhttp.GiveUpDeadline:
		return "deadline"
	case retryhttp.GiveUpCanceled:
		return "canceled"
	case retryhttp.GiveUpThrottled:
		return "throttled"
	case retryhttp.GiveUpNotResumable:
		return "not_resumable"
	case retryhttp.GiveUpResumeLimit:
		return "resume_limit"
	case retryhttp.GiveUpMisdirected:
		return "misdirected"
	case retryhttp.GiveUpPaced:
		return "paced"
	}
	return "_OTHER"
}

// delayBuckets are the bucket boundaries of the retry delay histogram, in
// seconds: the semantic conventions' HTTP duration buckets, extended to the
// default Retry-After limit of one minute.
var delayBuckets = []float64{0, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 30, 60}

// newObserver makes the instruments of t from mp. A meter's errors are
// ignored, as otelhttp ignores them: the SDK reports them through otel's
// error handler and still returns a working instrument; one that returns
// none gets a no-op instrument, so that telemetry never stops requests.
func newObserver(mp metric.MeterProvider, t *retryhttp.Transport) *observer {
	m := mp.Meter(ScopeName)
	o := &observer{transport: t}
	o.attempts = counter(m.Int64Counter(AttemptsName, metric.WithUnit("{attempt}"),
		metric.WithDescription("Attempts sent through the base transport, first attempts and retries, and the sends the base made again on its own.")))
	o.retries = counter(m.Int64Counter(RetriesName, metric.WithUnit("{retry}"),
		metric.WithDescription("Retries decided after a failed attempt, counted before the wait.")))
	o.giveUps = counter(m.Int64Counter(GiveUpsName, metric.WithUnit("{give_up}"),
		metric.WithDescription("Requests whose last attempt failed in a way worth retrying but that were not retried, by reason.")))
	o.hedges = counter(m.Int64Counter(HedgesName, metric.WithUnit("{hedge}"),
		metric.WithDescription("Hedges sent: further attempts of requests that had no response within the hedge delay.")))
	o.delay = histogram(m.Float64Histogram(RetryDelayName, metric.WithUnit("s"),
		metric.WithDescription("The wait before each retry."),
		metric.WithExplicitBucketBoundaries(delayBuckets...)))
	_, _ = m.Float64ObservableGauge(BalanceName, metric.WithUnit("{token}"),
		metric.WithDescription("Tokens left in the retry budget, per destination for a per-host budget."),
		metric.WithFloat64Callback(o.observeBudget))
	o.shed = counter(m.Int64Counter(ThrottledName, metric.WithUnit("{request}"),
		metric.WithDescription("Requests refused by adaptive throttling before any attempt, since their host had been failing.")))
	_, _ = m.Float64ObservableGauge(RejectionName, metric.WithUnit("1"),
		metric.WithDescription("The probability with which adaptive throttling refuses a request, per host that failed lately."),
		metric.WithFloat64Callback(o.observeRejections))
	o.paceWait = histogram(m.Float64Histogram(PaceWaitName, metric.WithUnit("s"),
		metric.WithDescription("The wait of an attempt for its turn to a paced host, before it is sent."),
		metric.WithExplicitBucketBoundaries(delayBuckets...)))
	_, _ = m.Int64ObservableGauge(PacedHostsName, metric.WithUnit("{host}"),
		metric.WithDescription("Hosts paced to the rate they accept: those that throttled, or announced a quota nearly spent, within 30 s."),
		metric.WithInt64Callback(o.observePaced))
	return o
}

// histogram returns h, or a no-op histogram if the meter returned none.
func histogram(h metric.Float64Histogram, _ error) metric.Float64Histogram {
	if h == nil {
		return noop.Float64Histogram{}
	}
	return h
}

// counter returns c, or a no-op counter if the meter returned none.
func counter(c metric.Int64Counter, _ error) metric.Int64Counter {
	if c == nil {
		return noop.Int64Counter{}
	}
	return c
}

// countAttempt counts an attempt about to be sent.
func (o *observer) countAttempt(ctx context.Context, r *http.Request) {
	if !o.attempts.Enabled(ctx) {
		return
	}
	o.attempts.Add(ctx, 1, o.destinations.options(r)...)
}

// maxDestinations bounds the attributes cached for the attempt counter.
const maxDestinations = 256

// destinations caches the attribute set of the attempt counter for each
// method and destination, so that counting the attempt of a request that
// succeeds allocates nothing. Reads are lock-free; a new destination copies
// the map, and past maxDestinations the set is made for each attempt.
type destinations struct {
	m  atomic.Pointer[map[destination][]metric.AddOption]
	mu sync.Mutex
}

type destination struct {
	method, scheme, host string
}

// options returns the options of r's attempts for the counter's Add, in a
// slice of their own that the caller passes on as it is, so that not even
// the variadic argument is allocated.
func (d *destinations) options(r *http.Request) []metric.AddOption {
	host := r.URL.Host
	if host == "" {
		host = r.Host
	}
	k := destination{r.Method, r.URL.Scheme, host}
	if m := d.m.Load(); m != nil {
		if opts, ok := (*m)[k]; ok {
			return opts
		}
	}
	var buf [3]attribute.KeyValue
	opts := []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(requestAttrs(buf[:0], r)...))}
	if m := d.m.Load(); m != nil && len(*m) >= maxDestinations {
		return opts // full: no lock for the destinations left out
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	var next map[destination][]metric.AddOption
	if m := d.m.Load(); m == nil {
		next = map[destination][]metric.AddOption{}
	} else if len(*m) < maxDestinations {
		next = maps.Clone(*m)
	} else {
		return opts
	}
	next[k] = opts
	d.m.Store(&next)
	return opts
}

// retry is the WithOnRetry hook.
func (o *observer) retry(e retryhttp.RetryEvent) {
	if e.BaseResend {
		o.baseResend(e)
		return
	}
	ctx := e.Request.Context()
	var buf [8]attribute.KeyValue
	attrs := requestAttrs(buf[:0], e.Request)
	attrs = append(attrs, ThrottleKey.Bool(e.Verdict.Throttle))
	o.delay.Record(ctx, e.Delay.Seconds(), metric.WithAttributes(attrs...))
	attrs = append(attrs, TimeoutKey.Bool(e.Verdict.Timeout), outcome(e.StatusCode, e.Err))
	if e.Resume {
		attrs = append(attrs, ResumeKey.Bool(true))
	}
	o.retries.Add(ctx, 1, metric.WithAttributes(attrs...))

	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		ev := []attribute.KeyValue{
			AttemptKey.Int(e.Attempt),
			DelayKey.Float64(e.Delay.Seconds()),
			outcomeEvent(e.StatusCode, e.Err),
			ThrottleKey.Bool(e.Verdict.Throttle),
			TimeoutKey.Bool(e.Verdict.Timeout),
		}
		if e.Verdict.RetryAfter > 0 {
			ev = append(ev, RetryAfterKey.Float64(e.Verdict.RetryAfter.Seconds()))
		}
		if e.TimeLeft > 0 {
			ev = append(ev, TimeLeftKey.Float64(e.TimeLeft.Seconds()))
		}
		name := RetryEventName
		if e.Resume {
			name = ResumeEventName
			ev = append(ev, OffsetKey.Int64(e.Offset))
		}
		span.AddEvent(name, trace.WithAttributes(ev...))
	}
}

// baseResend counts a send that the base made again on its own as an
// attempt, marked as such, and records it as an event on the span in the
// request's context, where the decisions are: it is no retry of the
// Transport's, and it shares the span of its attempt, which the hooks do
// not see.
func (o *observer) baseResend(e retryhttp.RetryEvent) {
	ctx := e.Request.Context()
	var buf [4]attribute.KeyValue
	o.attempts.Add(ctx, 1, metric.WithAttributes(append(requestAttrs(buf[:0], e.Request), BaseResendKey.Bool(true))...))
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		ev := []attribute.KeyValue{AttemptKey.Int(e.Attempt)}
		if e.Peer.IsValid() {
			ev = append(ev, semconv.NetworkPeerAddress(e.Peer.Addr().String()), semconv.NetworkPeerPort(int(e.Peer.Port())))
		}
		span.AddEvent(BaseResendEventName, trace.WithAttributes(ev...))
	}
}

// hedge is the WithOnHedge hook. The hedge's own client span carries
// http.request.resend_count, as every attempt after the first does.
func (o *observer) hedge(e retryhttp.HedgeEvent) {
	ctx := e.Request.Context()
	var buf [4]attribute.KeyValue
	o.hedges.Add(ctx, 1, metric.WithAttributes(requestAttrs(buf[:0], e.Request)...))
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.AddEvent(HedgeEventName, trace.WithAttributes(
			AttemptKey.Int(e.Attempt),
			DelayKey.Float64(e.Delay.Seconds()),
		))
	}
}

// pace is the WithOnPace hook: the wait of an attempt sent after its turn.
// A refusal is counted as a give-up, with reason paced.
func (o *observer) pace(e retryhttp.PaceEvent) {
	if e.Refused {
		return
	}
	ctx := e.Request.Context()
	var buf [4]attribute.KeyValue
	o.paceWait.Record(ctx, e.Wait.Seconds(), metric.WithAttributes(requestAttrs(buf[:0], e.Request)...))
}

// observePaced reports the hosts paced, once the Transport is ready.
func (o *observer) observePaced(_ context.Context, obs metric.Int64Observer) error {
	if o.ready.Load() {
		obs.Observe(int64(o.transport.PacedHosts()))
	}
	return nil
}

// giveUp is the WithOnGiveUp hook.
func (o *observer) giveUp(e retryhttp.GiveUpEvent) {
	ctx := e.Request.Context()
	reason := ReasonKey.String(ReasonValue(e.Reason))
	var buf [6]attribute.KeyValue
	attrs := append(requestAttrs(buf[:0], e.Request), reason, outcome(e.StatusCode, e.Err))
	if e.Resume {
		o.giveUps.Add(ctx, 1, metric.WithAttributes(append(attrs, ResumeKey.Bool(true))...))
	} else {
		o.giveUps.Add(ctx, 1, metric.WithAttributes(attrs...))
	}
	if e.Reason == retryhttp.GiveUpThrottled && e.Attempt == 0 { // a refused request, not a refused retry
		o.shed.Add(ctx, 1, metric.WithAttributes(attrs[:len(attrs)-2]...))
	}

	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		ev := []attribute.KeyValue{
			AttemptKey.Int(e.Attempt),
			reason,
			outcomeEvent(e.StatusCode, e.Err),
			ThrottleKey.Bool(e.Verdict.Throttle),
			TimeoutKey.Bool(e.Verdict.Timeout),
		}
		if e.Reason == retryhttp.GiveUpDeadline {
			ev = append(ev, TimeLeftKey.Float64(e.TimeLeft.Seconds()))
			if e.HostLatency > 0 {
				ev = append(ev, HostLatencyKey.Float64(e.HostLatency.Seconds()))
			}
		}
		if e.Resume {
			ev = append(ev, ResumeKey.Bool(true), OffsetKey.Int64(e.Offset))
		}
		span.AddEvent(GiveUpEventName, trace.WithAttributes(ev...))
	}
}

// observeBudget reports the balance of the Transport's budget: one point
// per host with a bucket for a budget.PerHost (at most its budget.MaxHosts), one
// point without attributes for a Bucket, and none for other budgets.
func (o *observer) observeBudget(_ context.Context, obs metric.Float64Observer) error {
	if !o.ready.Load() {
		return nil
	}
	switch b := o.transport.Budget().(type) {
	case *budget.PerHost:
		for hb := range b.Balances() {
			host, port := splitHost(hb.Scheme, hb.Host)
			obs.Observe(tokens(hb.Balance), metric.WithAttributes(
				semconv.URLScheme(hb.Scheme), semconv.ServerAddress(host), semconv.ServerPort(port)))
		}
	case *budget.Bucket:
		obs.Observe(tokens(b.Balance()))
	}
	return nil
}

// observeRejections reports the rejection probability of each host that
// the Transport's adaptive throttling counts (at most 1024), none without
// it.
func (o *observer) observeRejections(_ context.Context, obs metric.Float64Observer) error {
	if !o.ready.Load() {
		return nil
	}
	for r := range o.transport.Rejections() {
		host, port := splitHost(r.Scheme, r.Host)
		obs.Observe(r.Probability, metric.WithAttributes(
			semconv.URLScheme(r.Scheme), semconv.ServerAddress(host), semconv.ServerPort(port)))
	}
	return nil
}

func tokens(t budget.Millitokens) float64 { return float64(t) / float64(budget.Token) }

// requestAttrs appends the attributes that identify a request's destination
// in every instrument: http.request.method, server.address, server.port.
func requestAttrs(attrs []attribute.KeyValue, r *http.Request) []attribute.KeyValue {
	host := r.URL.Host
	if host == "" {
		host = r.Host
	}
	address, port := splitHost(r.URL.Scheme, host)
	return append(attrs, method(r.Method), semconv.ServerAddress(address), semconv.ServerPort(port))
}

// methodQuery is QUERY, the safe method with a body that the HTTP working
// group defines beside RFC 9110's: the semantic conventions know it, and
// net/http has no constant for it.
const methodQuery = "QUERY"

// method returns the http.request.method attribute: the method if the
// semantic conventions know it, and _OTHER if not.
func method(m string) attribute.KeyValue {
	switch m {
	case "", http.MethodGet:
		return semconv.HTTPRequestMethodGet
	case http.MethodPost:
		return semconv.HTTPRequestMethodPost
	case http.MethodPut:
		return semconv.HTTPRequestMethodPut
	case http.MethodDelete:
		return semconv.HTTPRequestMethodDelete
	case http.MethodHead:
		return semconv.HTTPRequestMethodHead
	case http.MethodPatch:
		return semconv.HTTPRequestMethodPatch
	case http.MethodOptions:
		return semconv.HTTPRequestMethodOptions
	case http.MethodTrace:
		return semconv.HTTPRequestMethodTrace
	case http.MethodConnect:
		return semconv.HTTPRequestMethodConnect
	case methodQuery:
		return semconv.HTTPRequestMethodQuery
	}
	return semconv.HTTPRequestMethodOther
}

// splitHost splits a host, with or without a port, into its address and
// port, the port defaulting to the scheme's.
func splitHost(scheme, host string) (string, int) {
	if h, p, err := net.SplitHostPort(host); err == nil {
		if n, err := strconv.Atoi(p); err == nil {
			return h, n
		}
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(scheme, "https") {
		return host, 443
	}
	return host, 80
}

// outcome returns the error.type of a failed attempt for the metrics: its
// status code, or the type of its error as the semantic conventions name
// it.
func outcome(status int, err error) attribute.KeyValue {
	if err != nil {
		return semconv.ErrorType(err)
	}
	return semconv.ErrorTypeKey.String(strconv.Itoa(status))
}

// outcomeEvent is outcome for a span event, which gives the status as
// http.response.status_code.
func outcomeEvent(status int, err error) attribute.KeyValue {
	if err != nil {
		return semconv.ErrorType(err)
	}
	return semconv.HTTPResponseStatusCode(status)
}
