package otelretry_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/backoff"
	"github.com/retryhttp/retryhttp/otelretry"
)

// urls is a base transport that records the URL of every attempt it is
// given, answering as its script does.
type urls struct {
	*script
	mu   sync.Mutex
	sent []string
}

func (u *urls) RoundTrip(r *http.Request) (*http.Response, error) {
	u.mu.Lock()
	u.sent = append(u.sent, r.URL.String())
	u.mu.Unlock()
	return u.script.RoundTrip(r)
}

// everything returns every string the spans and the metrics of tel carry,
// each with where it is: span names, span and event attributes, status
// descriptions, metric point attributes.
func (tel *telemetry) everything(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	kvs := func(where string, attrs []attribute.KeyValue) {
		for _, kv := range attrs {
			out[where+" "+string(kv.Key)] += kv.Value.String() + "\n"
		}
	}
	for _, s := range tel.spans.Ended() {
		out["span name"] += s.Name() + "\n"
		out["span status"] += s.Status().Description + "\n"
		kvs("span", s.Attributes())
		for _, e := range s.Events() {
			out["event name"] += e.Name + "\n"
			kvs("event", e.Attributes)
		}
	}
	var rm metricdata.ResourceMetrics
	require.NoError(t, tel.reader.Collect(context.Background(), &rm))
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			var sets []attribute.Set
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					sets = append(sets, p.Attributes)
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					sets = append(sets, p.Attributes)
				}
			case metricdata.Histogram[int64]:
				for _, p := range d.DataPoints {
					sets = append(sets, p.Attributes)
				}
			case metricdata.Gauge[float64]:
				for _, p := range d.DataPoints {
					sets = append(sets, p.Attributes)
				}
			}
			for _, set := range sets {
				kvs("metric "+m.Name, set.ToSlice())
			}
		}
	}
	return out
}

// assertNoSecret fails if any string of the telemetry holds one of secrets.
func assertNoSecret(t *testing.T, tel *telemetry, secrets ...string) {
	t.Helper()
	all := tel.everything(t)
	require.NotEmpty(t, all["span url.full"], "the spans have a url.full")
	for where, v := range all {
		for _, s := range secrets {
			assert.NotContains(t, v, s, "%s", where)
		}
	}
}

// urlFulls returns the url.full of each client span.
func urlFulls(tel *telemetry) []string {
	var out []string
	for _, s := range tel.clientSpans() {
		v, _ := attr(s.Attributes(), semconv.URLFullKey)
		out = append(out, v.AsString())
	}
	return out
}

func TestPresignedURLRedacted(t *testing.T) {
	// A presigned S3 GET answered 503, 503, 200: each attempt is sent to the
	// URL as it is, and no span, span name, event or metric of the three
	// attempts shows the credentials, not even a span name formatted from
	// the URL by the caller's otelhttp option.
	const (
		signature  = "4f3c2b1a0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c3b"
		credential = "ASIAEXAMPLEKEYID0001%2F20261125%2Fus-east-1%2Fs3%2Faws4_request"
		token      = "IQoJb3JpZ2luX2VjEXAMPLESESSIONTOKEN%2Fvalue%3D%3D"
	)
	presigned := "https://photos.s3.us-east-1.amazonaws.com/cat.jpg?X-Amz-Algorithm=AWS4-HMAC-SHA256" +
		"&X-Amz-Credential=" + credential + "&X-Amz-Date=20261125T062800Z&X-Amz-Expires=900" +
		"&X-Amz-Security-Token=" + token + "&X-Amz-SignedHeaders=host&X-Amz-Signature=" + signature
	want := "https://photos.s3.us-east-1.amazonaws.com/cat.jpg?X-Amz-Algorithm=AWS4-HMAC-SHA256" +
		"&X-Amz-Credential=REDACTED&X-Amz-Date=20261125T062800Z&X-Amz-Expires=900" +
		"&X-Amz-Security-Token=REDACTED&X-Amz-SignedHeaders=host&X-Amz-Signature=REDACTED"
	synctest.Test(t, func(t *testing.T) {
		tel := newTelemetry(t)
		base := &urls{script: newScript(map[string][]step{"/cat.jpg": statuses(503, 503, 200)})}
		tr := retryhttp.New(otelretry.Instrument(base,
			otelretry.WithTracerProvider(tel.tp), otelretry.WithMeterProvider(tel.mp),
			otelretry.WithHTTPOptions(otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string {
				return r.Method + " " + r.URL.String()
			}))), retryhttp.WithBackoff(backoff.Constant(time.Millisecond)))
		ctx, op := tel.operation(t.Context())
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, presigned, nil)
		require.NoError(t, err)
		resp, err := do(t, tr, req)
		require.NoError(t, err)
		require.Equal(t, 200, resp.StatusCode)
		op.End()

		assert.Equal(t, []string{presigned, presigned, presigned}, base.sent, "the URLs sent")
		assert.Equal(t, presigned, req.URL.String(), "the caller's request")
		assert.Equal(t, []string{want, want, want}, urlFulls(tel))
		for _, s := range tel.clientSpans() {
			assert.Equal(t, "GET "+want, s.Name())
		}
		assertNoSecret(t, tel, signature, credential, token)
		assert.Len(t, tel.span(t, "operation").Events(), 2, "the retry events")
	})
}

func TestUserInfoRedacted(t *testing.T) {
	// User information is shown as REDACTED:REDACTED, as the conventions
	// ask of url.full, on a span that fails without a response as on one
	// that has one; the attempt is still sent with it.
	synctest.Test(t, func(t *testing.T) {
		tel := newTelemetry(t)
		base := &urls{script: newScript(map[string][]step{"/v1": {{err: refused}, {status: 200}}})}
		raw := "https://alice:s3cr3t@svc.test/v1?sig=abc123&q=cats"
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, raw, nil)
		require.NoError(t, err)
		_, err = do(t, newTransport(tel, base), req)
		require.NoError(t, err)

		assert.Equal(t, []string{raw, raw}, base.sent)
		want := "https://REDACTED:REDACTED@svc.test/v1?sig=REDACTED&q=cats"
		assert.Equal(t, []string{want, want}, urlFulls(tel))
		assertNoSecret(t, tel, "alice", "s3cr3t", "abc123")
	})
}

func TestSensitiveQueryParameters(t *testing.T) {
	raw := "http://svc.test/?token=t0k3n&sig=s1g&Sig=upper&x-amz-signature=lower&q=1"
	for _, tt := range []struct {
		name string
		opts []otelretry.Option
		want string
	}{
		{"default: case-sensitive, as the conventions say", nil,
			"http://svc.test/?token=t0k3n&sig=REDACTED&Sig=upper&x-amz-signature=lower&q=1"},
		{"a key added to the default", []otelretry.Option{otelretry.WithSensitiveQueryParameters(
			append(otelretry.DefaultSensitiveQueryParameters(), "token")...)},
			"http://svc.test/?token=REDACTED&sig=REDACTED&Sig=upper&x-amz-signature=lower&q=1"},
		{"the list replaced", []otelretry.Option{otelretry.WithSensitiveQueryParameters("token", "q")},
			"http://svc.test/?token=REDACTED&sig=s1g&Sig=upper&x-amz-signature=lower&q=REDACTED"},
		{"none", []otelretry.Option{otelretry.WithSensitiveQueryParameters()}, raw},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tel := newTelemetry(t)
			base := &urls{script: newScript(map[string][]step{"/": statuses(200)})}
			opts := append([]otelretry.Option{otelretry.WithTracerProvider(tel.tp), otelretry.WithMeterProvider(tel.mp)}, tt.opts...)
			req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, raw, nil)
			require.NoError(t, err)
			_, err = do(t, retryhttp.New(otelretry.Instrument(base, opts...)), req)
			require.NoError(t, err)
			assert.Equal(t, []string{raw}, base.sent)
			assert.Equal(t, []string{tt.want}, urlFulls(tel))
		})
	}
}

func TestQueryMethodKnown(t *testing.T) {
	// QUERY is a method the semantic conventions know: its spans and every
	// metric say QUERY, not _OTHER. A QUERY with an idempotency key is
	// retried; one without is given up on.
	synctest.Test(t, func(t *testing.T) {
		tel := newTelemetry(t)
		base := newScript(map[string][]step{"/keyed": statuses(503, 200), "/bare": statuses(503)})
		tr := newTransport(tel, base)
		for _, path := range []string{"/keyed", "/bare"} {
			req, err := http.NewRequestWithContext(t.Context(), "QUERY", "http://svc.test"+path, strings.NewReader("select"))
			require.NoError(t, err)
			if path == "/keyed" {
				req.Header.Set("Idempotency-Key", "q-1")
			}
			_, err = do(t, tr, req)
			require.NoError(t, err)
		}

		spans := tel.clientSpans()
		require.Len(t, spans, 3)
		for _, s := range spans {
			m, _ := attr(s.Attributes(), semconv.HTTPRequestMethodKey)
			assert.Equal(t, "QUERY", m.AsString(), "the span's http.request.method")
		}
		m := tel.metrics(t)
		for _, name := range []string{otelretry.AttemptsName, otelretry.RetriesName, otelretry.GiveUpsName} {
			assert.Positive(t, sum(t, m[name]), name)
		}
		for where, v := range tel.everything(t) {
			if strings.HasSuffix(where, string(semconv.HTTPRequestMethodKey)) && strings.HasPrefix(where, "metric retryhttp.") ||
				where == "span "+string(semconv.HTTPRequestMethodKey) {
				assert.Equal(t, "QUERY", strings.Join(uniq(strings.Fields(v)), " "), where)
			}
		}
	})
}

func uniq(s []string) []string {
	var out []string
	for _, v := range s {
		if len(out) == 0 || out[len(out)-1] != v {
			out = append(out, v)
		}
	}
	return out
}
