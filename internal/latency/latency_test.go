package latency

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestLatencyBuckets(t *testing.T) {
	prev := time.Duration(0)
	for i := range latencyBuckets {
		up := latencyUpper(i)
		assert.Greater(t, up, prev, "bucket %d", i)
		prev = up
	}
	for _, d := range []time.Duration{0, time.Microsecond, 3 * time.Microsecond, time.Millisecond, 1500 * time.Microsecond,
		37 * time.Millisecond, time.Second, time.Hour} {
		i := latencyBucket(d)
		if i == latencyBuckets-1 {
			assert.GreaterOrEqual(t, d, latencyUpper(i-1), "%v in the last bucket", d)
			continue
		}
		assert.Less(t, d, latencyUpper(i), "%v below its bucket's upper bound", d)
		if i > 0 && i < latencyBuckets-1 {
			assert.GreaterOrEqual(t, d, latencyUpper(i-1), "%v at or above the previous bound", d)
		}
	}
}

// TestLatencyQuantile checks the quantile against known samples: none
// before enough are known, within a bucket's width of the true value, and
// following a change of the host's latency within two windows.
func TestLatencyQuantile(t *testing.T) {
	const window, minSamples = 1000, 100
	h := newHost()
	for i := range minSamples - 1 {
		h.Record(0, time.Duration(i+1)*time.Millisecond, window, 0.95, minSamples)
	}
	assert.Zero(t, h.Quantile(0.95, minSamples), "too few samples")

	h = newHost()
	for i := range window {
		h.Record(0, time.Duration(i+1)*time.Microsecond*10, window, 0.95, minSamples) // 10 µs to 10 ms
	}
	got := h.Quantile(0.95, minSamples)
	assert.InDelta(t, float64(9500*time.Microsecond), float64(got), 0.125*9500*float64(time.Microsecond), "p95 of 10 µs to 10 ms")

	h = newHost()
	for range window {
		h.Record(0, 2*time.Millisecond, window, 0.95, minSamples)
	}
	got = h.Quantile(0.95, minSamples)
	assert.Less(t, got, latencyUpper(latencyBucket(2*time.Millisecond)), "inside the one bucket")
	assert.GreaterOrEqual(t, got, latencyUpper(latencyBucket(2*time.Millisecond)-1))

	// The host turns ten times slower: two windows later, the quantile
	// is all new.
	for range 2 * window {
		h.Record(0, 20*time.Millisecond, window, 0.95, minSamples)
	}
	assert.InDelta(t, float64(20*time.Millisecond), float64(time.Duration(h.delay.Load())), 0.125*float64(20*time.Millisecond))
}
