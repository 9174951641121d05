package otelretry_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/backoff"
	"github.com/retryhttp/retryhttp/budget"
	"github.com/retryhttp/retryhttp/classify"
	"github.com/retryhttp/retryhttp/hedge"
	"github.com/retryhttp/retryhttp/otelretry"
)

// newTransport returns a Transport over base, instrumented with tel, that
// waits 100 ms before every retry.
func newTransport(tel *telemetry, base http.RoundTripper, opts ...retryhttp.Option) *retryhttp.Transport {
	return retryhttp.New(append([]retryhttp.Option{
		otelretry.Instrument(base, otelretry.WithTracerProvider(tel.tp), otelretry.WithMeterProvider(tel.mp)),
		retryhttp.WithBackoff(backoff.Constant(100 * time.Millisecond)),
		retryhttp.WithThrottleBackoff(backoff.Constant(100 * time.Millisecond)),
	}, opts...)...)
}

func TestSpanPerAttempt(t *testing.T) {
	// A request retried twice makes three client spans, children of the
	// caller's span, the resends carrying http.request.resend_count, and the
	// caller's span has an event for each retry.
	synctest.Test(t, func(t *testing.T) {
		tel := newTelemetry(t)
		base := newScript(map[string][]step{"/items": statuses(503, 503, 200)})
		ctx, op := tel.operation(t.Context())
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://svc.test/items", nil)
		require.NoError(t, err)
		resp, err := do(t, newTransport(tel, base), req)
		require.NoError(t, err)
		require.Equal(t, 200, resp.StatusCode)
		op.End()

		spans := tel.clientSpans()
		require.Len(t, spans, 3)
		for i, s := range spans {
			assert.Equal(t, "HTTP GET", s.Name())
			assert.Equal(t, op.SpanContext().SpanID(), s.Parent().SpanID(), "attempt %d's parent", i+1)
			assert.Equal(t, op.SpanContext().TraceID(), s.SpanContext().TraceID())
			resend, ok := attr(s.Attributes(), semconv.HTTPRequestResendCountKey)
			if i == 0 {
				assert.False(t, ok, "a first attempt has no resend count")
			} else {
				require.True(t, ok, "attempt %d has a resend count", i+1)
				assert.EqualValues(t, i, resend.AsInt64())
			}
			status, _ := attr(s.Attributes(), semconv.HTTPResponseStatusCodeKey)
			assert.EqualValues(t, []int{503, 503, 200}[i], status.AsInt64())
		}
		assert.Equal(t, codes.Error, spans[0].Status().Code)
		assert.Equal(t, codes.Unset, spans[2].Status().Code)

		events := tel.span(t, "operation").Events()
		require.Len(t, events, 2)
		for i, e := range events {
			assert.Equal(t, otelretry.RetryEventName, e.Name)
			want := []attribute.KeyValue{
				otelretry.AttemptKey.Int(i + 1),
				otelretry.DelayKey.Float64(0.1),
				semconv.HTTPResponseStatusCode(503),
				otelretry.ThrottleKey.Bool(false),
				otelretry.TimeoutKey.Bool(false),
			}
			assert.Equal(t, want, e.Attributes)
			// The event lies between the failed attempt and the resend.
			assert.False(t, e.Time.Before(spans[i].EndTime()))
			assert.False(t, e.Time.After(spans[i+1].StartTime()))
		}
	})
}

func TestSpansWithoutCallerSpan(t *testing.T) {
	// Without a span in the request's context each attempt is a trace of
	// its own, as the semantic conventions show, still numbered.
	synctest.Test(t, func(t *testing.T) {
		tel := newTelemetry(t)
		base := newScript(map[string][]step{"/": {{err: refused}, {status: 200}}})
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://svc.test/", nil)
		require.NoError(t, err)
		_, err = do(t, newTransport(tel, base), req)
		require.NoError(t, err)

		spans := tel.clientSpans()
		require.Len(t, spans, 2)
		assert.False(t, spans[0].Parent().IsValid())
		assert.Equal(t, codes.Error, spans[0].Status().Code, "the refused attempt")
		_, ok := attr(spans[0].Attributes(), semconv.ErrorTypeKey)
		assert.True(t, ok, "the refused attempt has an error.type")
		resend, _ := attr(spans[1].Attributes(), semconv.HTTPRequestResendCountKey)
		assert.EqualValues(t, 1, resend.AsInt64())
		assert.NotEqual(t, spans[0].SpanContext().TraceID(), spans[1].SpanContext().TraceID())
	})
}

func TestGiveUpReasons(t *testing.T) {
	// A request given up on says why: an event on the caller's span and a
	// count by reason.
	tests := []struct {
		name    string
		opts    []retryhttp.Option
		steps   []step
		method  string
		body    string
		timeout time.Duration
		reason  string
		attempt int
	}{
		{name: "attempts exhausted", steps: statuses(503), reason: "attempts_exhausted", attempt: 3},
		{
			name:    "budget exhausted",
			opts:    []retryhttp.Option{retryhttp.WithBudget(budget.NewBucket(budget.Capacity(5), budget.RetryCost(5), budget.TimeoutCost(5)))},
			steps:   statuses(503),
			reason:  "budget_exhausted",
			attempt: 2,
		},
		{name: "not resendable", steps: statuses(503), method: http.MethodPost, body: "order", reason: "not_resendable", attempt: 1},
		{
			name:    "body not replayable",
			opts:    []retryhttp.Option{retryhttp.WithBodyBufferLimit(4)},
			steps:   statuses(503),
			method:  http.MethodPut,
			body:    "longer than four bytes",
			reason:  "body_not_replayable",
			attempt: 1,
		},
		{
			name:    "Retry-After beyond the limit",
			steps:   []step{{status: 503, header: http.Header{"Retry-After": {"3600"}}}},
			reason:  "retry_after_limit",
			attempt: 1,
		},
		{
			name:    "rate limit reset beyond the limit",
			opts:    []retryhttp.Option{retryhttp.WithRateLimitHints()},
			steps:   []step{{status: 429, header: http.Header{"X-Ratelimit-Reset": {"3600"}}}},
			reason:  "rate_limit_reset_limit",
			attempt: 1,
		},
		{name: "deadline", steps: statuses(503), timeout: 50 * time.Millisecond, reason: "deadline", attempt: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tel := newTelemetry(t)
				base := newScript(map[string][]step{"/": tt.steps})
				ctx, op := tel.operation(t.Context())
				if tt.timeout > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tt.timeout)
					defer cancel()
				}
				req := newRequest(t, ctx, tt.method, tt.body)
				resp, err := do(t, newTransport(tel, base, tt.opts...), req)
				require.NoError(t, err)
				op.End()
				assert.Equal(t, tt.attempt, base.attempts("/"))
				assertGaveUp(t, tel, tt.reason, tt.attempt, resp.StatusCode)
				assert.Len(t, tel.clientSpans(), tt.attempt)
			})
		})
	}
	t.Run("canceled during the wait", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			tel := newTelemetry(t)
			base := newScript(map[string][]step{"/": statuses(503)})
			ctx, op := tel.operation(t.Context())
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			tr := newTransport(tel, base, retryhttp.WithOnRetry(func(retryhttp.RetryEvent) { cancel() }))
			_, err := do(t, tr, newRequest(t, ctx, "", ""))
			require.ErrorIs(t, err, context.Canceled)
			op.End()
			assertGaveUp(t, tel, "canceled", 1, 503)
		})
	})
}

// newRequest makes a request to http://svc.test/ with ctx, and with a body
// unless body is empty.
func newRequest(t *testing.T, ctx context.Context, method, body string) *http.Request {
	t.Helper()
	if method == "" {
		method = http.MethodGet
	}
	var req *http.Request
	var err error
	if body == "" {
		req, err = http.NewRequestWithContext(ctx, method, "http://svc.test/", nil)
	} else {
		// No GetBody: the Transport buffers the body, up to its limit.
		req, err = http.NewRequestWithContext(ctx, method, "http://svc.test/", strings.NewReader(body))
		req.GetBody = nil
	}
	require.NoError(t, err)
	return req
}

// assertGaveUp checks that the caller's span has one give-up event with
// reason and that the give-up counter counted it once.
func assertGaveUp(t *testing.T, tel *telemetry, reason string, attempt, status int) {
	t.Helper()
	var giveUps []string
	for _, e := range tel.span(t, "operation").Events() {
		if e.Name != otelretry.GiveUpEventName {
			continue
		}
		r, _ := attr(e.Attributes, otelretry.ReasonKey)
		giveUps = append(giveUps, r.AsString())
		n, _ := attr(e.Attributes, otelretry.AttemptKey)
		assert.EqualValues(t, attempt, n.AsInt64(), "attempt")
		s, _ := attr(e.Attributes, semconv.HTTPResponseStatusCodeKey)
		assert.EqualValues(t, status, s.AsInt64(), "status")
	}
	assert.Equal(t, []string{reason}, giveUps)
	m := tel.metrics(t)
	assert.EqualValues(t, 1, sum(t, m[otelretry.GiveUpsName]))
	data := m[otelretry.GiveUpsName].Data.(metricdata.Sum[int64])
	r, _ := data.DataPoints[0].Attributes.Value(otelretry.ReasonKey)
	assert.Equal(t, reason, r.AsString())
}

func TestUserHooksKept(t *testing.T) {
	// Instrument adds its hooks to the user's, before or after it.
	synctest.Test(t, func(t *testing.T) {
		tel := newTelemetry(t)
		var calls []string
		tr := retryhttp.New(
			retryhttp.WithOnRetry(func(retryhttp.RetryEvent) { calls = append(calls, "before") }),
			otelretry.Instrument(newScript(map[string][]step{"/": statuses(503, 200)}), otelretry.WithTracerProvider(tel.tp), otelretry.WithMeterProvider(tel.mp)),
			retryhttp.WithOnRetry(func(retryhttp.RetryEvent) { calls = append(calls, "after") }),
		)
		_, err := do(t, tr, newRequest(t, t.Context(), "", ""))
		require.NoError(t, err)
		assert.Equal(t, []string{"before", "after"}, calls)
		assert.EqualValues(t, 1, sum(t, tel.metrics(t)[otelretry.RetriesName]))
	})
}

// closer counts CloseIdleConnections calls.
type closer struct {
	http.RoundTripper
	closes int
}

func (c *closer) CloseIdleConnections() { c.closes++ }

func TestCloseIdleConnectionsReachesBase(t *testing.T) {
	// otelhttp's Transport has no CloseIdleConnections; the instrumented
	// base forwards it anyway.
	tel := newTelemetry(t)
	base := &closer{RoundTripper: newScript(nil)}
	tr := newTransport(tel, base)
	(&http.Client{Transport: tr}).CloseIdleConnections()
	assert.Equal(t, 1, base.closes)
}

func TestNilOptionPanics(t *testing.T) {
	assert.PanicsWithValue(t, "otelretry: Instrument: nil Option", func() { otelretry.Instrument(nil, nil) })
}

func TestTransportAsBasePanics(t *testing.T) {
	// A retryhttp Transport under the instrumented base would multiply the
	// attempts of the one over it: retryhttp.New refuses it, seeing through
	// the layers Instrument puts over it.
	tel := newTelemetry(t)
	assert.PanicsWithValue(t, "retryhttp: WithBase: the base is a retryhttp Transport, directly or through Unwrap: its retries would multiply this one's",
		func() { newTransport(tel, retryhttp.New()) })
}

func TestFilteredAttemptsLeaveTheCallerSpanAlone(t *testing.T) {
	// A request otelhttp's filter rejects has no attempt spans; its
	// resends must not mark the caller's span as a resend.
	synctest.Test(t, func(t *testing.T) {
		tel := newTelemetry(t)
		base := newScript(map[string][]step{"/": statuses(503, 200)})
		tr := retryhttp.New(otelretry.Instrument(base,
			otelretry.WithTracerProvider(tel.tp), otelretry.WithMeterProvider(tel.mp),
			otelretry.WithHTTPOptions(otelhttp.WithFilter(func(*http.Request) bool { return false }))))
		ctx, op := tel.operation(t.Context())
		_, err := do(t, tr, newRequest(t, ctx, "", ""))
		require.NoError(t, err)
		op.End()
		assert.Empty(t, tel.clientSpans())
		_, ok := attr(tel.span(t, "operation").Attributes(), semconv.HTTPRequestResendCountKey)
		assert.False(t, ok, "the caller's span got a resend count")
		assert.EqualValues(t, 2, sum(t, tel.metrics(t)[otelretry.AttemptsName]))
	})
}

func TestRetryEventFacets(t *testing.T) {
	// A verdict's facets and least delay are on the retry event, and the
	// least delay raises the delay.
	synctest.Test(t, func(t *testing.T) {
		tel := newTelemetry(t)
		base := newScript(map[string][]step{"/": statuses(503, 200)})
		slow := classify.Func(func(_ *http.Request, resp *http.Response, _ error) classify.Verdict {
			if resp != nil && resp.StatusCode == 503 {
				return classify.Verdict{Decision: classify.Retry, Throttle: true, Timeout: true, RetryAfter: 200 * time.Millisecond}
			}
			return classify.Verdict{Decision: classify.DontRetry}
		})
		ctx, op := tel.operation(t.Context())
		_, err := do(t, newTransport(tel, base, retryhttp.WithClassifier(slow)), newRequest(t, ctx, "", ""))
		require.NoError(t, err)
		op.End()
		events := tel.span(t, "operation").Events()
		require.Len(t, events, 1)
		assert.Equal(t, []attribute.KeyValue{
			otelretry.AttemptKey.Int(1),
			otelretry.DelayKey.Float64(0.2),
			semconv.HTTPResponseStatusCode(503),
			otelretry.ThrottleKey.Bool(true),
			otelretry.TimeoutKey.Bool(true),
			otelretry.RetryAfterKey.Float64(0.2),
		}, events[0].Attributes)
		retries := tel.metrics(t)[otelretry.RetriesName]
		assert.EqualValues(t, 1, sum(t, retries, semconv.HTTPRequestMethodGet, semconv.ServerAddress("svc.test"), semconv.ServerPort(80),
			otelretry.ThrottleKey.Bool(true), otelretry.TimeoutKey.Bool(true), semconv.ErrorTypeKey.String("503")))
	})
}

// slowFirst answers its first slow attempts (one, unless set) after a
// second, unless cancelled, and every other at once.
type slowFirst struct {
	n    atomic.Int32
	slow int32
}

func (s *slowFirst) RoundTrip(r *http.Request) (*http.Response, error) {
	if s.n.Add(1) <= max(s.slow, 1) {
		t := time.NewTimer(time.Second)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
			return nil, r.Context().Err()
		}
	}
	return &http.Response{StatusCode: 200, Header: http.Header{}, Body: http.NoBody, Request: r}, nil
}

// hedgedGet sends a GET within an operation span through a Transport that
// hedges after 10 ms over base, ends the span, and returns the response.
func hedgedGet(t *testing.T, tel *telemetry, base http.RoundTripper) *http.Response {
	t.Helper()
	tr := newTransport(tel, base, retryhttp.WithHedging(hedge.Delay(10*time.Millisecond)))
	ctx, op := tel.operation(t.Context())
	defer op.End()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://svc.test/items", nil)
	require.NoError(t, err)
	resp, err := do(t, tr, req)
	require.NoError(t, err)
	require.Equal(t, 200, resp.StatusCode)
	return resp
}

// resendCounts returns the http.request.resend_count of every client span
// that has one.
func resendCounts(tel *telemetry) []int64 {
	var resends []int64
	for _, s := range tel.clientSpans() {
		if v, ok := attr(s.Attributes(), semconv.HTTPRequestResendCountKey); ok {
			resends = append(resends, v.AsInt64())
		}
	}
	return resends
}

func TestHedgeSpansAndCounter(t *testing.T) {
	// A hedged request makes two client spans, the hedge's with
	// http.request.resend_count 1, an event on the caller's span, and one
	// count in the hedges counter.
	synctest.Test(t, func(t *testing.T) {
		tel := newTelemetry(t)
		hedgedGet(t, tel, &slowFirst{})

		require.Len(t, tel.clientSpans(), 2)
		assert.Equal(t, []int64{1}, resendCounts(tel), "the hedge is a resend")
		events := tel.span(t, "operation").Events()
		require.Len(t, events, 1)
		assert.Equal(t, otelretry.HedgeEventName, events[0].Name)
		m := tel.metrics(t)
		assert.EqualValues(t, 1, sum(t, m[otelretry.HedgesName]))
		assert.EqualValues(t, 2, sum(t, m[otelretry.AttemptsName]))
	})
}

func TestHedgeOfAHedge(t *testing.T) {
	// When the first hedge is slow too, a second goes out: three client
	// spans with resend counts 0, 1 and 2, two events, two hedges counted.
	synctest.Test(t, func(t *testing.T) {
		tel := newTelemetry(t)
		resp := hedgedGet(t, tel, &slowFirst{slow: 2})
		assert.Equal(t, 3, retryhttp.Attempts(resp))

		assert.ElementsMatch(t, []int64{1, 2}, resendCounts(tel))
		var attempts []int64
		for _, e := range tel.span(t, "operation").Events() {
			require.Equal(t, otelretry.HedgeEventName, e.Name)
			v, ok := attr(e.Attributes, otelretry.AttemptKey)
			require.True(t, ok)
			attempts = append(attempts, v.AsInt64())
		}
		assert.Equal(t, []int64{2, 3}, attempts)
		m := tel.metrics(t)
		assert.EqualValues(t, 2, sum(t, m[otelretry.HedgesName]))
		assert.EqualValues(t, 3, sum(t, m[otelretry.AttemptsName]))
	})
}

// TestAttemptSpansNamePeer proves that each attempt's span over a real
// connection carries the connection's remote address and port.
func TestAttemptSpansNamePeer(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if calls.Add(1) == 1 {
			http.Error(w, "unavailable", http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	tel := newTelemetry(t)
	tr := retryhttp.New(otelretry.Instrument(nil, otelretry.WithTracerProvider(tel.tp), otelretry.WithMeterProvider(tel.mp)),
		retryhttp.WithBackoff(backoff.Constant(0)))
	defer tr.CloseIdleConnections()
	req, err := http.NewRequest(http.MethodGet, srv.URL, nil)
	require.NoError(t, err)
	resp, err := do(t, tr, req)
	require.NoError(t, err)
	require.Equal(t, 200, resp.StatusCode)
	want := netip.MustParseAddrPort(srv.Listener.Addr().String())
	spans := tel.clientSpans()
	require.Len(t, spans, 2)
	for i, s := range spans {
		addr, ok := attr(s.Attributes(), semconv.NetworkPeerAddressKey)
		require.True(t, ok, "attempt %d has network.peer.address", i+1)
		assert.Equal(t, want.Addr().String(), addr.AsString())
		port, ok := attr(s.Attributes(), semconv.NetworkPeerPortKey)
		require.True(t, ok, "attempt %d has network.peer.port", i+1)
		assert.EqualValues(t, want.Port(), port.AsInt64())
	}
}
