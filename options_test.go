package retryhttp

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOptionsPanicOnInvalidValues(t *testing.T) {
	tests := []struct {
		name string
		opt  func() Option
		want string
	}{
		{"attempts", func() Option { return WithMaxAttempts(0) }, "WithMaxAttempts"},
		{"base", func() Option { return WithBase(nil) }, "WithBase"},
		{"backoff", func() Option { return WithBackoff(nil) }, "WithBackoff"},
		{"throttle backoff", func() Option { return WithThrottleBackoff(nil) }, "WithThrottleBackoff"},
		{"classifier", func() Option { return WithClassifier(nil) }, "WithClassifier"},
		{"budget", func() Option { return WithBudget(nil) }, "WithBudget"},
		{"retry-after limit", func() Option { return WithRetryAfterLimit(-time.Second) }, "WithRetryAfterLimit"},
		{"attempt timeout", func() Option { return WithAttemptTimeout(-1) }, "WithAttemptTimeout"},
		{"body buffer", func() Option { return WithBodyBufferLimit(-1) }, "WithBodyBufferLimit"},
		{"on retry", func() Option { return WithOnRetry(nil) }, "WithOnRetry"},
		{"logger", func() Option { return WithLogger(nil) }, "WithLogger"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				r := recover()
				require.NotNil(t, r, "no panic")
				assert.Contains(t, fmt.Sprint(r), tt.want)
			}()
			New(tt.opt())
		})
	}
	assert.PanicsWithValue(t, "retryhttp: New: nil Option", func() { New(nil) })
}
