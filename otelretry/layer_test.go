package otelretry

import (
	"net/http"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/retryhttp/retryhttp"
)

// okStub answers every request with a new 200 without a body.
type okStub struct{}

func (okStub) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Header: http.Header{}, Body: http.NoBody, Request: r}, nil
}

// BenchmarkAttemptLayer measures what the layer under otelhttp adds to a
// first attempt, the part of otelretry on a success's path: the attempt
// number read from the context and the attempt counted, with the SDK's
// meter provider. Its figures are steadier than BenchmarkSuccess's on a
// busy machine, since the operation is short.
func BenchmarkAttemptLayer(b *testing.B) {
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	for _, c := range []struct {
		name string
		rt   http.RoundTripper
	}{
		{"stub", okStub{}},
		{"layer", &attempts{base: okStub{}, o: newObserver(mp, retryhttp.New())}},
	} {
		b.Run(c.name, func(b *testing.B) {
			req, err := http.NewRequest(http.MethodGet, "http://svc.test/items", nil)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.rt.RoundTrip(req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
