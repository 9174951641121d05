package hedge

import (
	"math"
	"testing"
	"time"

	"github.com/retryhttp/retryhttp/internal/config"
	"github.com/stretchr/testify/assert"
)

func TestOptionsSetTheirField(t *testing.T) {
	for _, tt := range []struct {
		name string
		opt  Option
		want config.Hedge
	}{
		{"Delay", Delay(time.Second), config.Hedge{Delay: time.Second}},
		{"Quantile", Quantile(0.99), config.Hedge{Quantile: 0.99}},
		{"MinDelay", MinDelay(5 * time.Millisecond), config.Hedge{MinDelay: 5 * time.Millisecond}},
		{"MinDelay of 0", MinDelay(0), config.Hedge{}},
		{"MinSamples", MinSamples(1), config.Hedge{MinSamples: 1}},
		{"MaxFraction", MaxFraction(1), config.Hedge{MaxFraction: 1}},
		{"Samples", Samples(2), config.Hedge{Samples: 2}},
		{"Samples at most", Samples(1 << 30), config.Hedge{Samples: 1 << 30}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got config.Hedge
			tt.opt(&got)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestOptionsPanicOnInvalidValues(t *testing.T) {
	for _, tt := range []struct {
		f    func()
		want string
	}{
		{func() { Delay(0) }, "hedge: Delay: must be positive, got 0s"},
		{func() { Delay(-time.Second) }, "hedge: Delay: must be positive, got -1s"},
		{func() { Quantile(1) }, "hedge: Quantile: must be in (0, 1), got 1"},
		{func() { Quantile(0) }, "hedge: Quantile: must be in (0, 1), got 0"},
		{func() { Quantile(math.NaN()) }, "hedge: Quantile: must be in (0, 1), got NaN"},
		{func() { MinDelay(-1) }, "hedge: MinDelay: must not be negative, got -1ns"},
		{func() { MinSamples(0) }, "hedge: MinSamples: must be at least 1, got 0"},
		{func() { MaxFraction(0) }, "hedge: MaxFraction: must be in (0, 1], got 0"},
		{func() { MaxFraction(1.5) }, "hedge: MaxFraction: must be in (0, 1], got 1.5"},
		{func() { MaxFraction(math.NaN()) }, "hedge: MaxFraction: must be in (0, 1], got NaN"},
		{func() { Samples(1) }, "hedge: Samples: must be in [2, 2^30], got 1"},
		{func() { Samples(1<<30 + 1) }, "hedge: Samples: must be in [2, 2^30], got 1073741825"},
	} {
		t.Run(tt.want, func(t *testing.T) {
			assert.PanicsWithValue(t, tt.want, tt.f)
		})
	}
}
