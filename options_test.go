package retryhttp

import (
	"fmt"
	"log/slog"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/retryhttp/retryhttp/backoff"
	"github.com/retryhttp/retryhttp/budget"
	"github.com/retryhttp/retryhttp/classify"
	"github.com/retryhttp/retryhttp/deadline"
	"github.com/retryhttp/retryhttp/hedge"
	"github.com/retryhttp/retryhttp/resume"
	"github.com/retryhttp/retryhttp/throttle"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp/internal/latency"
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
	assert.PanicsWithValue(t, "retryhttp: New: option 1 of 1 is nil", func() { New(nil) })
	assert.PanicsWithValue(t, "retryhttp: New: option 2 of 3 is nil", func() { New(WithMaxAttempts(2), nil, WithoutBudget()) })
}

// TestABaseOrALoggerGivenTwicePanics: a second WithBase or WithLogger would
// drop the first without a word; a value given twice counts as the later.
func TestABaseOrALoggerGivenTwicePanics(t *testing.T) {
	assert.PanicsWithValue(t, "retryhttp: New: WithBase given twice: a Transport has one; give it once",
		func() { New(WithBase(newStub()), WithBase(newStub())) })
	l := slog.New(slog.DiscardHandler)
	assert.PanicsWithValue(t, "retryhttp: New: WithLogger given twice: a Transport has one; give it once",
		func() { New(WithLogger(l), WithLogger(l)) })
	assert.Equal(t, 5, New(WithMaxAttempts(2), WithMaxAttempts(5)).maxAttempts, "the later of two values")
}

// TestOptionsTakeEffect runs a request through each option that no other
// test exercises, proving that it changes what the Transport does.
func TestOptionsTakeEffect(t *testing.T) {
	tests := []struct {
		name     string
		opts     []Option
		steps    []step
		attempts int
		wait     time.Duration // before the second attempt
	}{
		{"throttle backoff", []Option{WithThrottleBackoff(backoff.Constant(7 * time.Second))}, statuses(429, 200), 2, 7 * time.Second},
		{"throttle backoff not used for 500", []Option{WithThrottleBackoff(backoff.Constant(7 * time.Second))}, statuses(500, 200), 2, 0},
		{"retry-after within a raised limit", []Option{WithRetryAfterLimit(2 * time.Minute)},
			[]step{{status: 503, header: http.Header{"Retry-After": {"90"}}}, {status: 200}}, 2, 90 * time.Second},
		{"retry-after over a lowered limit", []Option{WithRetryAfterLimit(5 * time.Second)},
			[]step{{status: 503, header: http.Header{"Retry-After": {"6"}}}, {status: 200}}, 1, 0},
		{"classifier", []Option{WithClassifier(classify.First(classify.Statuses(classify.DontRetry, 503), classify.Default()))}, statuses(503, 200), 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				base := &script{steps: tt.steps}
				start := time.Now()
				resp, err := newTestTransport(base, 0, tt.opts...).RoundTrip(get(t, "http://svc.test/"))
				require.NoError(t, err)
				resp.Body.Close()
				require.Equal(t, tt.attempts, base.count())
				if tt.attempts == 2 {
					assert.Equal(t, tt.wait, base.times[1].Sub(start))
				}
			})
		})
	}
}

func TestWithoutBudget(t *testing.T) {
	// The default budget would stop retrying after 100 retries (see
	// TestBudgetLimitsAmplification); without one, every request gets all
	// its attempts.
	synctest.Test(t, func(t *testing.T) {
		base := &script{steps: statuses(503)}
		tr := newTestTransport(base, 0, WithoutBudget())
		for range 1000 {
			resp, err := tr.RoundTrip(get(t, "http://svc.test/"))
			require.NoError(t, err)
			resp.Body.Close()
		}
		assert.Equal(t, 3000, base.count())
	})
}

// TestContradictingOptionsPanic: options that contradict each other, or of
// which one makes another do nothing, are refused by New, with a message
// naming both, as an invalid value is; each alone is accepted.
func TestContradictingOptionsPanic(t *testing.T) {
	tests := []struct {
		name string
		opts []Option
		want string
	}{
		{"budget on and off", []Option{WithBudget(budget.NewBucket()), WithoutBudget()}, "retryhttp: New: WithBudget and WithoutBudget contradict each other"},
		{"budget off and on", []Option{WithoutBudget(), WithBudget(budget.NewBucket())}, "retryhttp: New: WithBudget and WithoutBudget contradict each other"},
		{"resume on and off", []Option{WithResume(resume.Limit(3)), WithoutResume()}, "retryhttp: New: WithResume and WithoutResume contradict each other"},
		{"hedging with one attempt", []Option{WithMaxAttempts(1), WithHedging()}, "retryhttp: New: WithHedging does nothing with WithMaxAttempts(1): a hedge is an attempt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.PanicsWithValue(t, tt.want, func() { New(tt.opts...) })
			for _, o := range tt.opts {
				assert.NotPanics(t, func() { New(o) }, "each option alone")
			}
		})
	}
	assert.NotPanics(t, func() { New(WithMaxAttempts(2), WithHedging()) })
}

// unwrapper is a RoundTripper over another that says so.
type unwrapper struct{ http.RoundTripper }

func (u unwrapper) Unwrap() http.RoundTripper { return u.RoundTripper }

// TestStackedTransportsPanic proves that a Transport cannot be the base
// of another, directly or through Unwrap: its retries would multiply the
// other's. A GET to a server answering 503 reached it 9 times through two
// Transports of 3 attempts.
func TestStackedTransportsPanic(t *testing.T) {
	assert.PanicsWithValue(t, "retryhttp: WithBase: the base is a retryhttp Transport, directly or through Unwrap: its retries would multiply this one's",
		func() { WithBase(New()) })
	assert.Panics(t, func() { WithBase(&Transport{}) }, "a zero Transport")
	assert.Panics(t, func() { WithBase(unwrapper{unwrapper{New()}}) }, "through Unwrap")
	assert.NotPanics(t, func() { New(WithBase(unwrapper{http.DefaultTransport})) })
}

// TestFeatureOptionsGivenTwiceAddUp proves that a feature's options given
// in two calls add up field by field, a later one overriding an earlier
// one, for resumption, hedging, adaptive throttling and deadline headers:
// WithResume(StallTimeout) then WithResume(Limit) kept the default stall
// timeout before.
func TestFeatureOptionsGivenTwiceAddUp(t *testing.T) {
	tr := New(WithResume(resume.StallTimeout(3*time.Second)), WithResume(resume.Limit(2)))
	assert.Equal(t, 3*time.Second, tr.stallTimeout)
	assert.Equal(t, 2, tr.resumeLimit)
	tr = New(WithResume(resume.Limit(2)), WithResume(resume.Limit(5)))
	assert.Equal(t, 5, tr.resumeLimit, "the later one overrides")

	tr = New(WithHedging(hedge.Delay(20*time.Millisecond)), WithHedging(hedge.MaxFraction(0.5)))
	assert.Equal(t, 20*time.Millisecond, tr.hedge.Config().Delay)
	assert.Equal(t, latency.HedgeEarning(0.5), tr.hedge.Earning())

	tr = New(WithAdaptiveThrottling(throttle.Multiplier(3)), WithAdaptiveThrottling(throttle.MinRequests(7)))
	assert.InDelta(t, 3.0, tr.throttle.Config().Multiplier, 1e-9)
	assert.EqualValues(t, 7, tr.throttle.Config().MinRequests)

	tr = New(WithDeadlineHeader(deadline.GRPCTimeout), WithDeadlineHeader(deadline.Milliseconds("X-Timeout-Ms"), deadline.GRPCTimeout))
	assert.Equal(t, []deadline.Format{deadline.GRPCTimeout, deadline.Milliseconds("X-Timeout-Ms")}, tr.deadlineHeaders)
}
