package otelretry_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/deadline"
	"github.com/retryhttp/retryhttp/otelretry"
)

func TestDeadlineOnSpansAndEvents(t *testing.T) {
	// With deadline headers, each attempt's span carries the time left it
	// sent, the retry event the time the retry will have, and the give-up
	// for lack of time the time left.
	synctest.Test(t, func(t *testing.T) {
		tel := newTelemetry(t)
		base := newScript(map[string][]step{"/": statuses(503)})
		ctx, op := tel.operation(t.Context())
		ctx, cancel := context.WithTimeout(ctx, 180*time.Millisecond)
		defer cancel()
		resp, err := do(t, newTransport(tel, base, retryhttp.WithDeadlineHeader(deadline.GRPCTimeout)), newRequest(t, ctx, "", ""))
		require.NoError(t, err)
		op.End()
		assert.Equal(t, 503, resp.StatusCode)

		// 180 ms: the first attempt; 80 ms after a wait of 100; then not
		// enough for another wait.
		var sent []float64
		for _, s := range tel.clientSpans() {
			v, ok := attr(s.Attributes(), otelretry.DeadlineSentKey)
			require.True(t, ok)
			sent = append(sent, v.AsFloat64())
		}
		assert.Equal(t, []float64{0.18, 0.08}, sent)
		events := tel.span(t, "operation").Events()
		require.Len(t, events, 2)
		left, ok := attr(events[0].Attributes, otelretry.TimeLeftKey)
		require.True(t, ok, "the retry event has the time left")
		assert.InDelta(t, 0.08, left.AsFloat64(), 1e-9)
		assert.Equal(t, otelretry.GiveUpEventName, events[1].Name)
		assert.Contains(t, events[1].Attributes, otelretry.ReasonKey.String("deadline"))
		assert.Contains(t, events[1].Attributes, otelretry.TimeLeftKey.Float64(0.08))
		_, ok = attr(events[1].Attributes, otelretry.HostLatencyKey)
		assert.False(t, ok, "too few answers for a typical one")
	})
}

func TestNoDeadlineNoDeadlineAttributes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tel := newTelemetry(t)
		base := newScript(map[string][]step{"/": statuses(503, 200)})
		ctx, op := tel.operation(t.Context())
		_, err := do(t, newTransport(tel, base, retryhttp.WithDeadlineHeader(deadline.GRPCTimeout)), newRequest(t, ctx, "", ""))
		require.NoError(t, err)
		op.End()
		for _, s := range tel.clientSpans() {
			_, ok := attr(s.Attributes(), otelretry.DeadlineSentKey)
			assert.False(t, ok)
		}
		for _, e := range tel.span(t, "operation").Events() {
			_, ok := attr(e.Attributes, otelretry.TimeLeftKey)
			assert.False(t, ok)
		}
	})
}

func TestFirstAttemptWithoutTimeGivenUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tel := newTelemetry(t)
		base := newScript(map[string][]step{"/": statuses(200)})
		ctx, op := tel.operation(t.Context())
		ctx, cancel := context.WithTimeout(ctx, 500*time.Microsecond)
		defer cancel()
		_, err := do(t, newTransport(tel, base, retryhttp.WithDeadlineHeader(deadline.GRPCTimeout)), newRequest(t, ctx, "", ""))
		require.ErrorIs(t, err, retryhttp.ErrNoTimeLeft)
		op.End()
		assert.Empty(t, tel.clientSpans(), "no attempt")
		events := tel.span(t, "operation").Events()
		require.Len(t, events, 1)
		assert.Subset(t, events[0].Attributes, []attribute.KeyValue{
			otelretry.AttemptKey.Int(0),
			otelretry.ReasonKey.String("deadline"),
			otelretry.TimeLeftKey.Float64(0.0005),
			semconv.ErrorTypeKey.String("timeout"),
		})
		assert.Zero(t, base.attempts("/"))
	})
}
