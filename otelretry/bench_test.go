package otelretry_test

import (
	"net/http"
	"testing"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/otelretry"
)

// stub answers every request with a new 200 without a body, closing the
// request body as a real transport does. A new response each time, since
// otelhttp wraps the body of the response it is given.
type stub struct{ header http.Header }

func (s stub) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		r.Body.Close()
	}
	return &http.Response{StatusCode: 200, Header: s.header, Body: http.NoBody, Request: r}, nil
}

// BenchmarkSuccess compares a GET that succeeds at once through otelhttp
// alone, and through retryhttp instrumented by otelretry (otelhttp under
// it), with the SDK recording every span (sampled, exported nowhere) and
// every measurement (a manual reader that is never read). The bare stub and
// retryhttp without telemetry are there for scale.
func BenchmarkSuccess(b *testing.B) {
	tp := sdktrace.NewTracerProvider()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	prop := propagation.TraceContext{}
	base := stub{header: http.Header{}}
	for _, c := range []struct {
		name string
		rt   http.RoundTripper
	}{
		{"bare", base},
		{"retryhttp", retryhttp.New(retryhttp.WithBase(base))},
		{"otelhttp", otelhttp.NewTransport(base,
			otelhttp.WithTracerProvider(tp), otelhttp.WithMeterProvider(mp), otelhttp.WithPropagators(prop))},
		{"otelretry", retryhttp.New(otelretry.Instrument(base,
			otelretry.WithTracerProvider(tp), otelretry.WithMeterProvider(mp), otelretry.WithPropagators(prop)))},
	} {
		b.Run(c.name, func(b *testing.B) {
			req, err := http.NewRequest(http.MethodGet, "http://svc.test/items", nil)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				resp, err := c.rt.RoundTrip(req)
				if err != nil {
					b.Fatal(err)
				}
				resp.Body.Close() // ends otelhttp's span
			}
		})
	}
}
