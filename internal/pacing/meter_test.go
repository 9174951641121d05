package pacing

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestMeter(t *testing.T) {
	for _, tt := range []struct {
		name   string
		events []time.Duration
		want   float64
		ok     bool
	}{
		{"none", nil, 0, false},
		{"one", []time.Duration{0}, 0, false},
		{"two at once", []time.Duration{0, 0}, 0, false},
		{"50 a second for 100 ms", every(20*time.Millisecond, 6), 50, true},
		{"50 a second for 10 s", every(20*time.Millisecond, 501), 50, true},
		{"200 a second for a second", every(5*time.Millisecond, 201), 200, true},
		{"out of order counts at the latest", []time.Duration{0, 20 * time.Millisecond, 10 * time.Millisecond, 40 * time.Millisecond}, 0, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var m meter
			for _, e := range tt.events {
				m.add(int64(e))
			}
			got, ok := m.rate()
			assert.Equal(t, tt.ok, ok, "ok")
			if tt.want > 0 {
				assert.InEpsilon(t, tt.want, got, 0.02, "rate: got %v, want %v", got, tt.want)
			} else if ok {
				assert.Positive(t, got)
			}
		})
	}
}

// every returns n times, d apart, from 0.
func every(d time.Duration, n int) []time.Duration {
	ts := make([]time.Duration, n)
	for i := range ts {
		ts[i] = time.Duration(i) * d
	}
	return ts
}
