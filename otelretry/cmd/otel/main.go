// Command otel shows what otelretry records: it sends four requests through
// an instrumented retryhttp Transport to a flaky local server, then prints
// the spans and metrics, first as a short summary and then as
// OpenTelemetry's stdout exporters write them.
//
//	cd otelretry && go run ./cmd/otel
package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/stdout/stdoutmetric"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/backoff"
	"github.com/retryhttp/retryhttp/otelretry"
	"github.com/retryhttp/retryhttp/retryhttptest"
)

func main() {
	if err := run(os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// The server's behaviour, per path: /flaky fails twice then answers,
// /down always fails, /busy asks for a wait longer than the client's limit,
// and POST /orders fails once after running.
func fault(key string, attempt int) retryhttptest.Fault {
	switch {
	case strings.HasSuffix(key, " /flaky") && attempt <= 2:
		return retryhttptest.Status(http.StatusServiceUnavailable)
	case strings.HasSuffix(key, " /down"):
		return retryhttptest.Status(http.StatusServiceUnavailable)
	case strings.HasSuffix(key, " /busy"):
		return retryhttptest.RetryAfter(http.StatusTooManyRequests, 2*time.Minute)
	case strings.HasPrefix(key, "POST /orders") && attempt == 1:
		return retryhttptest.Status(http.StatusBadGateway)
	}
	return retryhttptest.Pass()
}

func run(w io.Writer) error {
	srv := retryhttptest.NewServer(nil, retryhttptest.Func(fault))
	defer srv.Close()

	// Two destinations for each signal: the stdout exporter, into a buffer
	// printed last, and an in-memory one for the summary.
	var exported bytes.Buffer
	res := resource.NewSchemaless(semconv.ServiceName("otelretry-demo"))
	spanOut, err := stdouttrace.New(stdouttrace.WithWriter(&exported), stdouttrace.WithPrettyPrint())
	if err != nil {
		return err
	}
	metricOut, err := stdoutmetric.New(stdoutmetric.WithWriter(&exported), stdoutmetric.WithPrettyPrint())
	if err != nil {
		return err
	}
	recorder := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithResource(res),
		sdktrace.WithSyncer(spanOut), sdktrace.WithSpanProcessor(recorder))
	reader := sdkmetric.NewManualReader()
	periodic := sdkmetric.NewPeriodicReader(metricOut, sdkmetric.WithInterval(time.Hour))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithResource(res), sdkmetric.WithReader(reader), sdkmetric.WithReader(periodic))

	// The composition: otelretry.Instrument gives the Transport its base,
	// under otelhttp, and its hooks.
	client := &http.Client{Transport: retryhttp.New(
		otelretry.Instrument(nil,
			otelretry.WithTracerProvider(tp),
			otelretry.WithMeterProvider(mp),
			otelretry.WithPropagators(propagation.TraceContext{})),
		retryhttp.WithBackoff(backoff.Exponential(20*time.Millisecond, 200*time.Millisecond)),
	)}

	fmt.Fprintf(w, "Four requests to a flaky server at %s, each inside a span of the caller's (\"checkout\", \"report\", ...).\n\n", srv.URL)
	requests := []struct{ op, method, path string }{
		{"checkout", http.MethodGet, "/flaky"},
		{"report", http.MethodGet, "/down"},
		{"sync", http.MethodGet, "/busy"},
		{"order", http.MethodPost, "/orders"},
	}
	tracer := tp.Tracer("demo")
	for _, r := range requests {
		ctx, span := tracer.Start(context.Background(), r.op)
		var body io.Reader
		if r.method == http.MethodPost {
			body = strings.NewReader(`{"item":42}`)
		}
		req, err := http.NewRequestWithContext(ctx, r.method, srv.URL+r.path, body)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			fmt.Fprintf(w, "%-8s %s %s: error %v\n", r.op, r.method, r.path, err)
		} else {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			fmt.Fprintf(w, "%-8s %s %-7s -> %d after %d attempt(s)\n", r.op, r.method, r.path, resp.StatusCode, retryhttp.Attempts(resp))
		}
		span.End()
	}

	fmt.Fprintln(w, "\nSpans: the caller's span, its decision events, and one client span per attempt")
	printTraces(w, recorder.Ended())

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nMetrics (otelretry's; otelhttp's http.client.request.duration is exported too)")
	printMetrics(w, rm)

	if err := tp.Shutdown(context.Background()); err != nil {
		return err
	}
	if err := mp.Shutdown(context.Background()); err != nil { // flushes the periodic reader
		return err
	}
	fmt.Fprintln(w, "\nThe same spans and metrics, as the stdout exporters write them:")
	_, err = w.Write(exported.Bytes())
	return err
}

// printTraces prints each caller's span with its events, then its client
// spans with their status and resend count.
func printTraces(w io.Writer, spans []sdktrace.ReadOnlySpan) {
	for _, root := range spans {
		if root.Parent().IsValid() || root.SpanKind() == trace.SpanKindClient {
			continue
		}
		fmt.Fprintf(w, "  %s  (trace %s)\n", root.Name(), root.SpanContext().TraceID().String()[:8])
		var children []sdktrace.ReadOnlySpan
		for _, s := range spans {
			if s.Parent().SpanID() == root.SpanContext().SpanID() {
				children = append(children, s)
			}
		}
		slices.SortFunc(children, func(a, b sdktrace.ReadOnlySpan) int { return a.StartTime().Compare(b.StartTime()) })
		// Each event follows the attempt it judges, as in a trace view.
		for i, c := range children {
			fmt.Fprintf(w, "    ├ span %s [%s]\n", c.Name(), values(c.Attributes(),
				semconv.HTTPResponseStatusCodeKey, semconv.HTTPRequestResendCountKey, semconv.ErrorTypeKey))
			for _, e := range root.Events() {
				if e.Time.Before(c.StartTime()) || i+1 < len(children) && !e.Time.Before(children[i+1].StartTime()) {
					continue
				}
				fmt.Fprintf(w, "    │   event %s [%s]\n", e.Name, values(e.Attributes,
					otelretry.AttemptKey, otelretry.DelayKey, otelretry.ReasonKey, semconv.HTTPResponseStatusCodeKey,
					otelretry.ThrottleKey, otelretry.TimeoutKey))
			}
		}
	}
}

// values formats the attributes of kvs with the given keys, in that order.
func values(kvs []attribute.KeyValue, keys ...attribute.Key) string {
	var parts []string
	for _, k := range keys {
		for _, kv := range kvs {
			if kv.Key == k {
				parts = append(parts, string(k)+"="+kv.Value.String())
			}
		}
	}
	return strings.Join(parts, " ")
}

// printMetrics prints the points of otelretry's instruments.
func printMetrics(w io.Writer, rm metricdata.ResourceMetrics) {
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != otelretry.ScopeName {
			continue
		}
		for _, m := range sm.Metrics {
			fmt.Fprintf(w, "  %s (%s)\n", m.Name, m.Unit)
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					fmt.Fprintf(w, "    %-4d %s\n", p.Value, set(p.Attributes))
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					fmt.Fprintf(w, "    count %d, sum %.3f s  %s\n", p.Count, p.Sum, set(p.Attributes))
				}
			case metricdata.Gauge[float64]:
				for _, p := range d.DataPoints {
					fmt.Fprintf(w, "    %-6g %s\n", p.Value, set(p.Attributes))
				}
			}
		}
	}
}

// set formats an attribute set, leaving out the keys every point has.
func set(s attribute.Set) string {
	var parts []string
	for _, kv := range s.ToSlice() {
		switch kv.Key {
		case semconv.ServerAddressKey, semconv.URLSchemeKey:
			continue
		}
		parts = append(parts, string(kv.Key)+"="+kv.Value.String())
	}
	return "{" + strings.Join(parts, " ") + "}"
}
