package pacing

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

// firstAt returns the first time, in steps of a millisecond up to a
// minute, at which f reaches y.
func firstAt(f func(t float64) float64, y float64) float64 {
	for t := 0.0; t < 60; t += 0.001 {
		if f(t) >= y {
			return t
		}
	}
	return math.Inf(1)
}

// awsCubic is the AWS SDK's adaptive rate after a cut from wMax requests a
// second (beta 0.7, scale constant 0.4 in requests a second), t seconds
// after it.
func awsCubic(wMax, t float64) float64 {
	k := math.Cbrt(wMax * (1 - 0.7) / 0.4)
	return 0.4*math.Pow(t-k, 3) + wMax
}

func TestGrowthRegainsAndDoubles(t *testing.T) {
	ours := func(t float64) float64 { return growth(t, growFlat) }
	assert.Equal(t, beta, growth(0, growFlat), "cut to beta")
	assert.InDelta(t, 1-margin, growth(growK, growFlat), 1e-9, "the plateau reached after growK")
	assert.InDelta(t, 1-margin, growth(growK+growFlat, growFlat), 1e-9, "flat until it ends")
	assert.Equal(t, beta, growth(-1, growFlat), "before the cut")
	assert.False(t, math.IsInf(growth(1e9, growFlat), 0), "far after the cut, a rate clampRate bounds")

	regain, double := firstAt(ours, 1), firstAt(ours, 2)
	assert.InDelta(t, 1.92, regain, 0.01, "wMax regained: the doc says 1.92 s")
	assert.InDelta(t, 2.22, double, 0.01, "wMax doubled: the doc says 2.22 s")

	// The AWS SDK's adaptive mode, from 50 requests a second, as the doc
	// states it, and at any rate slower than ours.
	for _, w := range []float64{10, 50, 1000} {
		aws := func(t float64) float64 { return awsCubic(w, t) / w }
		awsRegain, awsDouble := firstAt(aws, 1), firstAt(aws, 2)
		if w == 50 {
			assert.InDelta(t, 3.35, awsRegain, 0.01, "AWS regains 50/s: the doc says 3.35 s")
			assert.InDelta(t, 8.35, awsDouble, 0.01, "AWS doubles 50/s: the doc says 8.35 s")
		}
		assert.Less(t, regain, awsRegain, "from %v/s, wMax regained sooner than by AWS's", w)
		assert.Less(t, double, awsDouble, "from %v/s, wMax doubled sooner than by AWS's", w)
	}

	assert.InDelta(t, 1-margin, growth(growK+0.1, 0), 0.015, "no plateau: the probe starts at once")
}
