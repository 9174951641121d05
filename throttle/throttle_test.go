package throttle

import (
	"context"
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
		want config.Throttle
	}{
		{"Multiplier", Multiplier(3), config.Throttle{Multiplier: 3}},
		{"Multiplier of 1", Multiplier(1), config.Throttle{Multiplier: 1}},
		{"Window", Window(time.Minute), config.Throttle{Window: time.Minute}},
		{"Window at least", Window(100 * time.Millisecond), config.Throttle{Window: 100 * time.Millisecond}},
		{"MaxRejection", MaxRejection(0.99), config.Throttle{MaxRejection: 0.99}},
		{"MinRequests", MinRequests(1), config.Throttle{MinRequests: 1}},
		{"Shared", Shared(nopStore{}), config.Throttle{Store: nopStore{}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got config.Throttle
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
		{func() { Multiplier(0.5) }, "throttle: Multiplier: must be a finite number of at least 1, got 0.5"},
		{func() { Multiplier(math.NaN()) }, "throttle: Multiplier: must be a finite number of at least 1, got NaN"},
		{func() { Multiplier(math.Inf(1)) }, "throttle: Multiplier: must be a finite number of at least 1, got +Inf"},
		{func() { Window(time.Millisecond) }, "throttle: Window: must be at least 100ms, got 1ms"},
		{func() { Window(-time.Second) }, "throttle: Window: must be at least 100ms, got -1s"},
		{func() { MaxRejection(1) }, "throttle: MaxRejection: must be in (0, 1), got 1"},
		{func() { MaxRejection(0) }, "throttle: MaxRejection: must be in (0, 1), got 0"},
		{func() { MaxRejection(math.NaN()) }, "throttle: MaxRejection: must be in (0, 1), got NaN"},
		{func() { MinRequests(0) }, "throttle: MinRequests: must be at least 1, got 0"},
		{func() { Shared(nil) }, "throttle: Shared: nil Store"},
	} {
		t.Run(tt.want, func(t *testing.T) {
			assert.PanicsWithValue(t, tt.want, tt.f)
		})
	}
}

// nopStore is a Store that shares nothing.
type nopStore struct{}

func (nopStore) Exchange(context.Context, time.Duration, []Counts) ([]Counts, error) { return nil, nil }
