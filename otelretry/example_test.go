package otelretry_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/backoff"
	"github.com/retryhttp/retryhttp/otelretry"
	"github.com/retryhttp/retryhttp/retryhttptest"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// printSpans prints each recorded span's url.full and resend count.
func printSpans(spans *tracetest.SpanRecorder, host string) {
	for _, s := range spans.Ended() {
		var url, resends string
		for _, a := range s.Attributes() {
			switch a.Key {
			case "url.full":
				url = strings.Replace(a.Value.AsString(), host, "HOST", 1)
			case "http.request.resend_count":
				resends = fmt.Sprint(" resend ", a.Value.AsInt64())
			}
		}
		fmt.Println(url + resends)
	}
}

// get sends a GET through client and returns its status.
func get(client *http.Client, url string) int {
	resp, err := client.Get(url)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// Instrument gives each attempt a client span; a retry's span counts its
// resends, and a presigned URL's signature never reaches a span.
func ExampleInstrument() {
	srv := retryhttptest.NewServer(nil, retryhttptest.First(1, retryhttptest.Status(http.StatusServiceUnavailable)))
	defer srv.Close()

	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	client := &http.Client{Transport: retryhttp.New(
		otelretry.Instrument(nil, otelretry.WithTracerProvider(tp)),
		retryhttp.WithBackoff(backoff.Constant(time.Millisecond)),
	)}
	fmt.Println(get(client, srv.URL+"/report?X-Amz-Signature=secret&part=1"))
	printSpans(spans, strings.TrimPrefix(srv.URL, "http://"))
	// Output:
	// 200
	// http://HOST/report?X-Amz-Signature=REDACTED&part=1
	// http://HOST/report?X-Amz-Signature=REDACTED&part=1 resend 1
}

// WithSensitiveQueryParameters replaces the query parameters whose values
// are redacted; append to the default list to add one.
func ExampleWithSensitiveQueryParameters() {
	srv := retryhttptest.NewServer(nil, retryhttptest.Pass())
	defer srv.Close()

	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	client := &http.Client{Transport: retryhttp.New(otelretry.Instrument(nil,
		otelretry.WithTracerProvider(tp),
		otelretry.WithSensitiveQueryParameters(append(otelretry.DefaultSensitiveQueryParameters(), "token")...),
	))}
	fmt.Println(get(client, srv.URL+"/items?token=secret&sig=secret&page=2"))
	printSpans(spans, strings.TrimPrefix(srv.URL, "http://"))
	// Output:
	// 200
	// http://HOST/items?token=REDACTED&sig=REDACTED&page=2
}

// Instrument with exporters wired as a program wires them: spans to an
// exporter (stdout's, here into a buffer), metrics to a reader that is
// read on demand (a periodic reader with an OTLP exporter in production).
func ExampleInstrument_exporters() {
	srv := retryhttptest.NewServer(nil, retryhttptest.First(1, retryhttptest.Status(http.StatusServiceUnavailable)))
	defer srv.Close()

	var exported bytes.Buffer
	spanOut, err := stdouttrace.New(stdouttrace.WithWriter(&exported))
	if err != nil {
		panic(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spanOut))
	defer tp.Shutdown(context.Background())
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())

	client := &http.Client{Transport: retryhttp.New(
		otelretry.Instrument(nil, otelretry.WithTracerProvider(tp), otelretry.WithMeterProvider(mp)),
		retryhttp.WithBackoff(backoff.Constant(time.Millisecond)),
	)}
	fmt.Println(get(client, srv.URL))

	fmt.Println("spans exported:", strings.Count(exported.String(), `"SpanContext"`))
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		panic(err)
	}
	var names []string
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if strings.HasPrefix(m.Name, "retryhttp.") {
				names = append(names, m.Name)
			}
		}
	}
	sort.Strings(names)
	fmt.Println(strings.Join(names, "\n"))
	// Output:
	// 200
	// spans exported: 2
	// retryhttp.budget.balance
	// retryhttp.client.attempts
	// retryhttp.client.retries
	// retryhttp.client.retry.delay
	// retryhttp.pace.hosts
}
