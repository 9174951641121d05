package otelretry_test

import (
	"bytes"
	"io"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/retryhttp/retryhttp/otelretry"
	"github.com/retryhttp/retryhttp/resume"
	"github.com/retryhttp/retryhttp/retryhttptest"
)

// file serves 64 KiB that may be resumed: ServeContent with a strong ETag.
var file = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("ETag", `"v1"`)
	http.ServeContent(w, r, "", time.Unix(1_700_000_000, 0), bytes.NewReader(make([]byte, 64<<10)))
})

func TestResumeEventAndSpans(t *testing.T) {
	// A body cut after 1000 bytes and resumed makes two client spans, the
	// resume's with http.request.resend_count 1, a resume event on the
	// caller's span with the offset, and a retry counted as a resume.
	synctest.Test(t, func(t *testing.T) {
		tel := newTelemetry(t)
		base := retryhttptest.NewTransport(file, retryhttptest.Sequence(retryhttptest.CloseAfter(1000)))
		ctx, op := tel.operation(t.Context())
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://svc.test/file", nil)
		require.NoError(t, err)
		resp, err := do(t, newTransport(tel, base), req)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		op.End()

		assert.Equal(t, []int64{1}, resendCounts(tel))
		assert.Len(t, tel.clientSpans(), 2)
		events := tel.span(t, "operation").Events()
		require.Len(t, events, 1)
		assert.Equal(t, otelretry.ResumeEventName, events[0].Name)
		assert.Equal(t, []attribute.KeyValue{
			otelretry.AttemptKey.Int(1),
			otelretry.DelayKey.Float64(0.1),
			semconv.ErrorTypeKey.String("*errors.errorString"),
			otelretry.ThrottleKey.Bool(false),
			otelretry.TimeoutKey.Bool(false),
			otelretry.OffsetKey.Int64(1000),
		}, events[0].Attributes)
		retries := tel.metrics(t)[otelretry.RetriesName]
		assert.EqualValues(t, 1, sum(t, retries, semconv.HTTPRequestMethodGet, semconv.ServerAddress("svc.test"), semconv.ServerPort(80),
			otelretry.ThrottleKey.Bool(false), otelretry.TimeoutKey.Bool(false), semconv.ErrorTypeKey.String("*errors.errorString"),
			otelretry.ResumeKey.Bool(true)))
	})
}

func TestResumeGiveUp(t *testing.T) {
	// A body that may not be resumed (its ETag is weak) and is cut is a
	// give-up of reason not_resumable, marked as a resume's.
	synctest.Test(t, func(t *testing.T) {
		tel := newTelemetry(t)
		weak := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("ETag", `W/"v1"`)
			http.ServeContent(w, r, "", time.Unix(1_700_000_000, 0), bytes.NewReader(make([]byte, 64<<10)))
		})
		base := retryhttptest.NewTransport(weak, retryhttptest.CloseAfter(1000))
		ctx, op := tel.operation(t.Context())
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://svc.test/file", nil)
		require.NoError(t, err)
		resp, err := newTransport(tel, base).RoundTrip(req)
		require.NoError(t, err)
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		var rerr *resume.Error
		require.ErrorAs(t, err, &rerr)
		op.End()

		events := tel.span(t, "operation").Events()
		require.Len(t, events, 1)
		assert.Equal(t, otelretry.GiveUpEventName, events[0].Name)
		v, _ := attr(events[0].Attributes, otelretry.ReasonKey)
		assert.Equal(t, "not_resumable", v.AsString())
		v, _ = attr(events[0].Attributes, otelretry.OffsetKey)
		assert.Equal(t, int64(1000), v.AsInt64())
		giveUps := tel.metrics(t)[otelretry.GiveUpsName]
		assert.EqualValues(t, 1, sum(t, giveUps, semconv.HTTPRequestMethodGet, semconv.ServerAddress("svc.test"), semconv.ServerPort(80),
			otelretry.ReasonKey.String("not_resumable"), semconv.ErrorTypeKey.String("*resume.Error"), otelretry.ResumeKey.Bool(true)))
	})
}
