package otelretry_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// telemetry is an in-memory OpenTelemetry SDK: a span recorder and a
// manual metric reader.
type telemetry struct {
	spans  *tracetest.SpanRecorder
	reader *sdkmetric.ManualReader
	tp     *sdktrace.TracerProvider
	mp     *sdkmetric.MeterProvider
}

func newTelemetry(t *testing.T) *telemetry {
	spans := tracetest.NewSpanRecorder()
	reader := sdkmetric.NewManualReader()
	return &telemetry{
		spans:  spans,
		reader: reader,
		tp:     sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)),
		mp:     sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)),
	}
}

// operation starts a span for a logical operation, as a server handler's
// span or a caller's own span would be.
func (tel *telemetry) operation(ctx context.Context) (context.Context, trace.Span) {
	return tel.tp.Tracer("test").Start(ctx, "operation")
}

// clientSpans returns the ended client spans, in the order they ended.
func (tel *telemetry) clientSpans() []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range tel.spans.Ended() {
		if s.SpanKind() == trace.SpanKindClient {
			out = append(out, s)
		}
	}
	return out
}

// span returns the ended span named name.
func (tel *telemetry) span(t *testing.T, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	for _, s := range tel.spans.Ended() {
		if s.Name() == name {
			return s
		}
	}
	require.FailNow(t, "no span named "+name)
	return nil
}

// metrics collects the metrics of the retryhttp scope by name.
func (tel *telemetry) metrics(t *testing.T) map[string]metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, tel.reader.Collect(context.Background(), &rm))
	out := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			out[m.Name] = m
		}
	}
	return out
}

// sum returns the value of the counter point with exactly attrs, or of all
// its points when attrs is nil.
func sum(t *testing.T, m metricdata.Metrics, attrs ...attribute.KeyValue) int64 {
	t.Helper()
	data, ok := m.Data.(metricdata.Sum[int64])
	require.True(t, ok, "%s is a %T", m.Name, m.Data)
	want := attribute.NewSet(slices.Clone(attrs)...) // NewSet sorts its argument
	var n int64
	for _, p := range data.DataPoints {
		if attrs == nil || p.Attributes.Equals(&want) {
			n += p.Value
		}
	}
	return n
}

func ptr[T any](v T) *T { return &v }

// attr returns the value of the attribute key in kvs, and whether it is
// there.
func attr(kvs []attribute.KeyValue, key attribute.Key) (attribute.Value, bool) {
	for _, kv := range kvs {
		if kv.Key == key {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

// step is one attempt's outcome: a status with headers, or an error.
type step struct {
	status int
	header http.Header
	err    error
}

func statuses(codes ...int) []step {
	s := make([]step, len(codes))
	for i, c := range codes {
		s[i] = step{status: c}
	}
	return s
}

// script is an in-memory base transport that answers the i-th attempt at a
// host and path ("a.test/"), or else at a path ("/"), with the i-th step for
// it (the last step repeats), closing request bodies as net/http's
// transport does.
type script struct {
	mu    sync.Mutex
	steps map[string][]step
	seen  map[string]int
}

func newScript(steps map[string][]step) *script {
	return &script{steps: steps, seen: map[string]int{}}
}

func (s *script) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	s.mu.Lock()
	key := r.URL.Host + r.URL.Path
	if _, ok := s.steps[key]; !ok {
		key = r.URL.Path
	}
	steps := s.steps[key]
	st := steps[min(s.seen[key], len(steps)-1)]
	s.seen[key]++
	s.mu.Unlock()
	if st.err != nil {
		return nil, st.err
	}
	h := st.header.Clone()
	if h == nil {
		h = http.Header{}
	}
	return &http.Response{StatusCode: st.status, Status: http.StatusText(st.status), Header: h,
		Body: io.NopCloser(strings.NewReader("body")), Request: r}, nil
}

func (s *script) attempts(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen[path]
}

// refused is the error of a dial the server refused.
var refused = &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}

// do sends a request through rt and closes the response body, which ends
// the last attempt's span.
func do(t *testing.T, rt http.RoundTripper, req *http.Request) (*http.Response, error) {
	t.Helper()
	resp, err := rt.RoundTrip(req)
	if resp != nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	return resp, err
}
