package otelretry

import (
	"context"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-cleanhttp"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/base"
	"github.com/retryhttp/retryhttp/deadline"
)

// ScopeName is the instrumentation scope of the instruments this package
// makes.
const ScopeName = "github.com/retryhttp/retryhttp/otelretry"

// An Option configures Instrument.
type Option func(*config)

type config struct {
	tracerProvider trace.TracerProvider
	meterProvider  metric.MeterProvider
	propagators    propagation.TextMapPropagator
	httpOptions    []otelhttp.Option
	sensitive      []string // nil: DefaultSensitiveQueryParameters
}

// WithTracerProvider sets the provider of the attempt spans. The default is
// the global provider, otel.GetTracerProvider(), as otelhttp's.
func WithTracerProvider(tp trace.TracerProvider) Option {
	if tp == nil {
		panic("otelretry: WithTracerProvider: nil TracerProvider")
	}
	return func(c *config) { c.tracerProvider = tp }
}

// WithMeterProvider sets the provider of the retry instruments, and of
// otelhttp's. The default is the global provider, otel.GetMeterProvider().
func WithMeterProvider(mp metric.MeterProvider) Option {
	if mp == nil {
		panic("otelretry: WithMeterProvider: nil MeterProvider")
	}
	return func(c *config) { c.meterProvider = mp }
}

// WithPropagators sets the propagators otelhttp injects into each attempt's
// headers. The default is the global propagator,
// otel.GetTextMapPropagator().
func WithPropagators(p propagation.TextMapPropagator) Option {
	if p == nil {
		panic("otelretry: WithPropagators: nil TextMapPropagator")
	}
	return func(c *config) { c.propagators = p }
}

// WithHTTPOptions adds options to the otelhttp Transport that makes the
// attempt spans: a span name formatter, filters, a client trace. They are
// applied after the providers and propagators set here, so an otelhttp
// option for the same setting takes precedence.
func WithHTTPOptions(opts ...otelhttp.Option) Option {
	return func(c *config) { c.httpOptions = append(c.httpOptions, opts...) }
}

// Instrument returns a retryhttp Option that makes a Transport observable
// with OpenTelemetry. It sets the Transport's base to an otelhttp Transport
// over base, so that every attempt is a client span of its own, and under
// otelhttp a layer that marks each resend with http.request.resend_count
// and counts attempts. It adds hooks (retryhttp.WithOnRetry and
// retryhttp.WithOnGiveUp and retryhttp.WithOnHedge, which keep the
// caller's own hooks) that record
// each decision after a retryable failure as an event on the span of the
// request's context and in the metrics, and it reports the Transport's
// budget as a gauge. The package documentation lists every instrument.
//
// base is the transport that makes each attempt. When it is nil, Instrument
// uses a transport like retryhttp's default: go-cleanhttp's pooled
// transport keeping up to 100 idle connections per host. Pass the base
// here, not to retryhttp.WithBase as well: a Transport has one base, and
// retryhttp.New panics when given two. A base that
// is a retryhttp Transport, or unwraps to one, makes retryhttp.New panic,
// as retryhttp.WithBase does: its retries would multiply the Transport's.
//
// Most callers want
//
//	client := &http.Client{Transport: retryhttp.New(otelretry.Instrument(nil))}
//
// Instrument panics on a nil Option. Its instruments are registered when
// the returned Option is applied, that is in retryhttp.New: make each
// Transport once, as retryhttp advises anyway, since the budget gauge holds
// its Transport for as long as the meter provider lives.
func Instrument(base http.RoundTripper, opts ...Option) retryhttp.Option {
	c := config{}
	for _, o := range opts {
		if o == nil {
			panic("otelretry: Instrument: nil Option")
		}
		o(&c)
	}
	if base == nil {
		base = defaultBase()
	}
	if c.meterProvider == nil {
		c.meterProvider = otel.GetMeterProvider()
	}
	if c.sensitive == nil {
		c.sensitive = DefaultSensitiveQueryParameters()
	}
	var hopts []otelhttp.Option
	if c.tracerProvider != nil {
		hopts = append(hopts, otelhttp.WithTracerProvider(c.tracerProvider))
	}
	hopts = append(hopts, otelhttp.WithMeterProvider(c.meterProvider))
	if c.propagators != nil {
		hopts = append(hopts, otelhttp.WithPropagators(c.propagators))
	}
	hopts = append(hopts, c.httpOptions...)

	return func(t *retryhttp.Transport) {
		o := newObserver(c.meterProvider, t)
		layer := &attempts{base: base, o: o}
		retryhttp.WithBase(&spans{otelhttp.NewTransport(layer, hopts...), layer, redactor{c.sensitive}})(t)
		retryhttp.WithOnRetry(o.retry)(t)
		retryhttp.WithOnGiveUp(o.giveUp)(t)
		retryhttp.WithOnHedge(o.hedge)(t)
		retryhttp.WithOnPace(o.pace)(t)
	}
}

// defaultBase returns a transport configured as retryhttp's default base.
func defaultBase() http.RoundTripper {
	t := cleanhttp.DefaultPooledTransport()
	t.MaxIdleConnsPerHost = 100
	t.DialContext = base.NewDialer().DialContext
	return t
}

// An observer records the attempts and decisions of one Transport.
type observer struct {
	attempts metric.Int64Counter
	retries  metric.Int64Counter
	giveUps  metric.Int64Counter
	hedges   metric.Int64Counter
	shed     metric.Int64Counter // requests refused by adaptive throttling
	delay    metric.Float64Histogram
	paceWait metric.Float64Histogram

	destinations destinations

	// transport is the Transport observed. Its budget is read only once
	// ready is set, by the first attempt, after retryhttp.New has returned
	// the Transport: New is still writing its fields when the option runs.
	transport *retryhttp.Transport
	ready     atomic.Bool
}

// spans is otelhttp's Transport over the attempts layer. It shows otelhttp
// each attempt with the credentials in its URL redacted, and the attempts
// layer under otelhttp sends it with its URL as it was. otelhttp's
// Transport has no CloseIdleConnections, so spans forwards it to the base
// itself, keeping http.Client.CloseIdleConnections working.
type spans struct {
	otel   http.RoundTripper
	layer  *attempts
	redact redactor
}

func (s *spans) RoundTrip(r *http.Request) (*http.Response, error) {
	return s.otel.RoundTrip(s.redact.redact(r))
}

// CloseIdleConnections closes the idle connections of the base, if it has
// the method.
func (s *spans) CloseIdleConnections() { s.layer.CloseIdleConnections() }

// Unwrap returns the base, so that the Transport traces each attempt's
// connection when the base is an *http.Transport.
func (s *spans) Unwrap() http.RoundTripper { return s.layer.base }

// attempts is the layer under otelhttp: it sees each attempt with its span
// in the request's context.
type attempts struct {
	base http.RoundTripper
	o    *observer
}

func (a *attempts) RoundTrip(r *http.Request) (*http.Response, error) {
	if !a.o.ready.Load() { // a load, not a store, on every attempt but the first
		a.o.ready.Store(true)
	}
	r, full := restore(r)
	ctx := r.Context()
	resend := base.Attempt(ctx) - 1
	sent, hasSent := deadline.Sent(ctx)
	if resend > 0 || full != "" || r.Method == methodQuery || hasSent {
		if span := trace.SpanFromContext(ctx); madeSpan(ctx) && span.IsRecording() {
			annotate(span, r, resend, full, sent)
		}
	}
	a.o.countAttempt(ctx, r)
	resp, err := a.base.RoundTrip(r)
	if peer := base.Peer(ctx); peer.IsValid() && madeSpan(ctx) {
		if span := trace.SpanFromContext(ctx); span.IsRecording() {
			span.SetAttributes(semconv.NetworkPeerAddress(peer.Addr().String()), semconv.NetworkPeerPort(int(peer.Port())))
		}
	}
	return resp, err
}

// annotate completes what otelhttp recorded on the attempt's span: the
// resend count of a resend; url.full with user information redacted, as
// the semantic conventions ask, where otelhttp drops it; QUERY as a
// method the conventions know, which otelhttp records as _OTHER (with
// http.request.method.original QUERY); and the time left the attempt's
// deadline headers carried, when they carried one (sent > 0).
func annotate(span trace.Span, r *http.Request, resend int, full string, sent time.Duration) {
	var buf [4]attribute.KeyValue
	attrs := buf[:0]
	if resend > 0 {
		attrs = append(attrs, semconv.HTTPRequestResendCount(resend))
	}
	if full != "" {
		attrs = append(attrs, semconv.URLFull(full))
	}
	if r.Method == methodQuery {
		attrs = append(attrs, semconv.HTTPRequestMethodQuery)
	}
	if sent > 0 {
		attrs = append(attrs, DeadlineSentKey.Float64(sent.Seconds()))
	}
	span.SetAttributes(attrs...)
}

// madeSpan reports whether otelhttp made a span for the attempt whose
// context is ctx, rather than letting it through unobserved, as it does for
// a request that a filter (otelhttp.WithFilter) rejects: the span in ctx is
// then the caller's, which must not be marked as a resend. otelhttp gives
// every request it makes a span for a client labeler; the tests of the
// resend count fail if it stops doing so.
func madeSpan(ctx context.Context) bool {
	_, ok := otelhttp.ClientLabelerFromContext(ctx)
	return ok
}

// CloseIdleConnections forwards to the base, if it has the method.
func (a *attempts) CloseIdleConnections() {
	if c, ok := a.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
