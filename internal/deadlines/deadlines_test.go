package deadlines

import (
	"context"
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/retryhttp/retryhttp/deadline"
)

// TestRetryFitsLongestDelay checks the deadline check with the longest
// delay a server can ask for (a Retry-After past what a Duration holds,
// under WithRetryAfterLimit(math.MaxInt64)) and with deadlines long past:
// the time left saturates instead of wrapping round to a time that fits.
func TestRetryFitsLongestDelay(t *testing.T) {
	now := time.Date(2026, time.March, 4, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name     string
		deadline time.Time
		delay    time.Duration
		fits     bool
		left     time.Duration
	}{
		{"a minute left, a second's delay", now.Add(time.Minute), time.Second, true, 59 * time.Second},
		{"a minute left, the longest delay", now.Add(time.Minute), math.MaxInt64, false, time.Minute - math.MaxInt64},
		{"a second past, the longest delay", now.Add(-time.Second), math.MaxInt64, false, math.MinInt64},
		{"a deadline in year 1, a nanosecond's delay", time.Date(1, time.January, 1, 0, 0, 0, 0, time.UTC), 1, false, math.MinInt64},
		{"a deadline in year 1, no delay", time.Date(1, time.January, 1, 0, 0, 0, 0, time.UTC), 0, false, math.MinInt64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithDeadline(context.Background(), tt.deadline)
			defer cancel()
			for _, check := range []bool{true, false} {
				assert.Equal(t, tt.fits, RetryFits(ctx, now, tt.delay, 0, check), "RetryFits, check %t", check)
				assert.Equal(t, tt.left, LeftAfter(ctx, now, tt.delay), "LeftAfter")
			}
		})
	}
}

// TestTimeToSend checks that an attempt is sent with at least MinTimeLeft
// before its deadline, and always without one.
func TestTimeToSend(t *testing.T) {
	now := time.Date(2026, time.March, 4, 12, 0, 0, 0, time.UTC)
	left, ok := TimeToSend(context.Background(), now)
	assert.True(t, ok, "no deadline")
	assert.Zero(t, left)
	for _, tt := range []struct {
		left time.Duration
		ok   bool
	}{{time.Second, true}, {MinTimeLeft, true}, {MinTimeLeft - 1, false}, {-time.Second, false}} {
		ctx, cancel := context.WithDeadline(context.Background(), now.Add(tt.left))
		left, ok := TimeToSend(ctx, now)
		cancel()
		assert.Equal(t, tt.left, left)
		assert.Equal(t, tt.ok, ok, "%v left", tt.left)
	}
}

// TestRetryFitsTypicalAnswer checks that a retry needs the host's typical
// answer time, and at least MinTimeLeft.
func TestRetryFitsTypicalAnswer(t *testing.T) {
	now := time.Date(2026, time.March, 4, 12, 0, 0, 0, time.UTC)
	ctx, cancel := context.WithDeadline(context.Background(), now.Add(100*time.Millisecond))
	defer cancel()
	assert.True(t, RetryFits(ctx, now, 40*time.Millisecond, 60*time.Millisecond, true))
	assert.False(t, RetryFits(ctx, now, 41*time.Millisecond, 60*time.Millisecond, true))
	assert.False(t, RetryFits(ctx, now, 100*time.Millisecond-MinTimeLeft+1, 0, true), "less than MinTimeLeft")
	assert.True(t, RetryFits(ctx, now, 41*time.Millisecond, 60*time.Millisecond, false), "check off: any time left")
	assert.True(t, RetryFits(context.Background(), now, time.Hour, time.Hour, true), "no deadline")
}

// TestHeader checks that the deadline headers are set on the attempt's
// own header, and on a clone of the caller's.
func TestHeader(t *testing.T) {
	caller := http.Header{"X": {"1"}}
	h := Header(caller, false, []deadline.Format{deadline.GRPCTimeout}, 1500*time.Millisecond)
	assert.Equal(t, "1500m", h.Get("Grpc-Timeout"))
	assert.Empty(t, caller.Get("Grpc-Timeout"), "the caller's header is not modified")
	own := http.Header{}
	assert.Equal(t, "1500m", Header(own, true, []deadline.Format{deadline.GRPCTimeout}, 1500*time.Millisecond).Get("Grpc-Timeout"))
	assert.Equal(t, "1500m", own.Get("Grpc-Timeout"), "the attempt's own header is set in place")
}
