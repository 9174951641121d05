package pace

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/retryhttp/retryhttp/internal/config"
	"github.com/stretchr/testify/assert"
)

func TestOptionsSetTheirField(t *testing.T) {
	for _, tt := range []struct {
		name string
		opt  Option
		want config.Pace
	}{
		{"MaxWait", MaxWait(time.Second), config.Pace{MaxWait: time.Second}},
		{"MaxWait of 0", MaxWait(0), config.Pace{}},
		{"PartitionHeader", PartitionHeader("Authorization"), config.Pace{PartitionHeader: "Authorization"}},
		{"PartitionHeader in canonical form", PartitionHeader("x-api-key"), config.Pace{PartitionHeader: "X-Api-Key"}},
		{"MaxHosts", MaxHosts(1), config.Pace{MaxHosts: 1}},
		{"Quota", Quota("API.Example.com", 500, time.Minute), config.Pace{Quotas: map[string]float64{"api.example.com": 500.0 / 60}}},
		{"Quota with the default port", Quota("api.example.com:443", 20, time.Second), config.Pace{Quotas: map[string]float64{"api.example.com": 20}}},
		{"Quota with a port", Quota("localhost:8080", 1, time.Second), config.Pace{Quotas: map[string]float64{"localhost:8080": 1}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got config.Pace
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
		{func() { MaxWait(-1) }, "pace: MaxWait: must not be negative, got -1ns"},
		{func() { PartitionHeader("") }, `pace: PartitionHeader: must be a valid header name, got ""`},
		{func() { PartitionHeader("X-Key:") }, `pace: PartitionHeader: must be a valid header name, got "X-Key:"`},
		{func() { PartitionHeader("X Key") }, `pace: PartitionHeader: must be a valid header name, got "X Key"`},
		{func() { MaxHosts(0) }, "pace: MaxHosts: must be at least 1, got 0"},
		{func() { Quota("", 1, time.Second) }, `pace: Quota: needs a host and a positive number of requests per a positive time, got "", 1 per 1s`},
		{func() { Quota("h", 0, time.Second) }, `pace: Quota: needs a host and a positive number of requests per a positive time, got "h", 0 per 1s`},
		{func() { Quota("h", 1, 0) }, `pace: Quota: needs a host and a positive number of requests per a positive time, got "h", 1 per 0s`},
	} {
		t.Run(tt.want, func(t *testing.T) {
			assert.PanicsWithValue(t, tt.want, tt.f)
		})
	}
}

func TestQuotasAddUpAndTheLaterReplaces(t *testing.T) {
	var got config.Pace
	for _, o := range []Option{Quota("a.test", 1, time.Second), Quota("b.test", 2, time.Second), Quota("a.test", 3, time.Second)} {
		o(&got)
	}
	assert.Equal(t, map[string]float64{"a.test": 3, "b.test": 2}, got.Quotas)
}

func TestError(t *testing.T) {
	for _, tt := range []struct {
		err  *Error
		want string
	}{
		{&Error{Host: "api.example.com", Wait: 3200 * time.Millisecond, Allowed: time.Second},
			"retryhttp: pace: api.example.com: a request would wait 3.2s for its turn, more than the 1s allowed"},
		{&Error{Host: "api.example.com:8443", Wait: 1234567890, Allowed: 250 * time.Millisecond},
			"retryhttp: pace: api.example.com:8443: a request would wait 1.235s for its turn, more than the 250ms allowed"},
		{&Error{Host: "h", Wait: 1500 * time.Microsecond, Allowed: 1234}, "retryhttp: pace: h: a request would wait 1.5ms for its turn, more than the 1.234µs allowed"},
		{&Error{Host: "h", Wait: time.Second}, "retryhttp: pace: h: a request would wait 1s for its turn, more than the 0s allowed"},
	} {
		t.Run(tt.want, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.err.Error(), "Error()")
			assert.ErrorIs(t, tt.err, ErrWaitTooLong)
			wrapped := fmt.Errorf("Get %q: %w", "https://h/", tt.err)
			assert.ErrorIs(t, wrapped, ErrWaitTooLong, "wrapped")
			var got *Error
			assert.True(t, errors.As(wrapped, &got), "errors.As")
			assert.Same(t, tt.err, got)
		})
	}
	assert.NotErrorIs(t, &Error{}, errors.New("other"))
}
