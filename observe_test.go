package retryhttp

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/retryhttp/retryhttp/backoff"
	"github.com/retryhttp/retryhttp/budget"
	"github.com/retryhttp/retryhttp/classify"
	"github.com/retryhttp/retryhttp/internal/attempt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGiveUpReasons(t *testing.T) {
	// Each way of ending the retries of a retryable failure calls the
	// give-up hook once, with its reason, the last attempt and its outcome.
	refused := errors.New("refused")
	tests := []struct {
		name    string
		opts    []Option
		steps   []step
		request func(t *testing.T, ctx context.Context) *http.Request
		reason  GiveUpReason
		attempt int
		status  int
		err     error
	}{
		{
			name:    "attempts exhausted",
			steps:   statuses(503),
			reason:  GiveUpAttemptsExhausted,
			attempt: 3,
			status:  503,
		},
		{
			name: "attempts exhausted after errors",
			opts: []Option{WithClassifier(classify.Func(func(*http.Request, *http.Response, error) classify.Verdict {
				return classify.Verdict{Decision: classify.Retry}
			}))},
			steps:   []step{{err: refused}},
			reason:  GiveUpAttemptsExhausted,
			attempt: 3,
			err:     refused,
		},
		{
			name:    "budget exhausted",
			opts:    []Option{WithBudget(budget.NewBucket(budget.Capacity(5), budget.RetryCost(5), budget.TimeoutCost(5)))},
			steps:   statuses(503),
			reason:  GiveUpBudgetExhausted,
			attempt: 2,
			status:  503,
		},
		{
			name:  "not resendable",
			steps: statuses(503),
			request: func(t *testing.T, ctx context.Context) *http.Request {
				req, _ := withBody(t, ctx, http.MethodPost, "http://svc.test/", "payload", true)
				return req
			},
			reason:  GiveUpNotResendable,
			attempt: 1,
			status:  503,
		},
		{
			name:  "body not replayable",
			opts:  []Option{WithBodyBufferLimit(4)},
			steps: statuses(503),
			request: func(t *testing.T, ctx context.Context) *http.Request {
				req, _ := withBody(t, ctx, http.MethodPut, "http://svc.test/", "longer than four bytes", false)
				return req
			},
			reason:  GiveUpBodyNotReplayable,
			attempt: 1,
			status:  503,
		},
		{
			name:    "Retry-After beyond the limit",
			steps:   []step{{status: 503, header: http.Header{"Retry-After": {"3600"}}}},
			reason:  GiveUpRetryAfterLimit,
			attempt: 1,
			status:  503,
		},
		{
			name:    "rate limit reset beyond the limit",
			opts:    []Option{WithRateLimitHints()},
			steps:   []step{{status: 429, header: http.Header{"X-Ratelimit-Reset": {"3600"}}}},
			reason:  GiveUpRateLimitResetLimit,
			attempt: 1,
			status:  429,
		},
		{
			name:  "deadline",
			opts:  []Option{WithBackoff(backoff.Constant(time.Second))},
			steps: statuses(503),
			request: func(t *testing.T, ctx context.Context) *http.Request {
				ctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
				t.Cleanup(cancel)
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://svc.test/", nil)
				require.NoError(t, err)
				return req
			},
			reason:  GiveUpDeadline,
			attempt: 1,
			status:  503,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var events []GiveUpEvent
				base := &script{steps: tt.steps}
				opts := append(slices.Clone(tt.opts), WithOnGiveUp(func(e GiveUpEvent) { events = append(events, e) }))
				req := get(t, "http://svc.test/")
				if tt.request != nil {
					req = tt.request(t, t.Context())
				}
				resp, _ := newTestTransport(base, 0.5, opts...).RoundTrip(req)
				if resp != nil {
					resp.Body.Close()
				}
				require.Len(t, events, 1)
				e := events[0]
				assert.Equal(t, tt.reason, e.Reason)
				assert.Same(t, req, e.Request)
				assert.Equal(t, tt.attempt, e.Attempt)
				assert.Equal(t, tt.attempt, base.count(), "attempts sent")
				assert.Equal(t, tt.status, e.StatusCode)
				assert.Equal(t, tt.err, e.Err)
				assert.Equal(t, classify.Retry, e.Verdict.Decision)
			})
		})
	}
}

func TestGiveUpCanceledDuringWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		var events []GiveUpEvent
		base := &script{steps: statuses(503)}
		tr := newTestTransport(base, 0.5,
			WithOnRetry(func(RetryEvent) { cancel() }),
			WithOnGiveUp(func(e GiveUpEvent) { events = append(events, e) }))
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://svc.test/", nil)
		require.NoError(t, err)
		resp, err := tr.RoundTrip(req)
		require.Nil(t, resp)
		require.ErrorIs(t, err, context.Canceled)
		require.Len(t, events, 1)
		assert.Equal(t, GiveUpCanceled, events[0].Reason)
		assert.Equal(t, 1, events[0].Attempt)
		assert.Equal(t, 503, events[0].StatusCode)
		assert.Equal(t, 1, base.count())
	})
}

func TestNoGiveUpWithoutRetryableFailure(t *testing.T) {
	// A success, a final failure and a retry that succeeds give nothing up.
	for _, steps := range [][]step{statuses(200), statuses(404), statuses(503, 200)} {
		synctest.Test(t, func(t *testing.T) {
			gaveUp := 0
			base := &script{steps: steps}
			resp, err := newTestTransport(base, 0.5, WithOnGiveUp(func(GiveUpEvent) { gaveUp++ })).RoundTrip(get(t, "http://svc.test/"))
			require.NoError(t, err)
			resp.Body.Close()
			assert.Zero(t, gaveUp, "give-ups after %d", steps[0].status)
		})
	}
}

func TestHooksCompose(t *testing.T) {
	// Every WithOnRetry and WithOnGiveUp adds a hook, called in the order of
	// the options, so that an instrumentation does not replace the user's.
	synctest.Test(t, func(t *testing.T) {
		var calls []string
		hook := func(name string) Option {
			return func(tr *Transport) {
				WithOnRetry(func(RetryEvent) { calls = append(calls, "retry "+name) })(tr)
				WithOnGiveUp(func(GiveUpEvent) { calls = append(calls, "give up "+name) })(tr)
			}
		}
		base := &script{steps: statuses(503)}
		resp, err := newTestTransport(base, 0.5, WithMaxAttempts(2), hook("a"), hook("b")).RoundTrip(get(t, "http://svc.test/"))
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, []string{"retry a", "retry b", "give up a", "give up b"}, calls)
	})
}

func TestAttemptNumbers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var seen []int
		base := rtFunc(func(r *http.Request) (*http.Response, error) {
			seen = append(seen, attempt.Number(r.Context()))
			return &http.Response{StatusCode: 503, Header: http.Header{}, Body: http.NoBody}, nil
		})
		resp, err := newTestTransport(base, 0.5).RoundTrip(get(t, "http://svc.test/"))
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, []int{1, 2, 3}, seen)
		assert.Equal(t, 1, attempt.Number(context.Background()))
	})
}

func TestPerHostBalances(t *testing.T) {
	h := budget.NewPerHost(budget.Capacity(10), budget.RetryCost(2), budget.MaxHosts(4))
	assert.Empty(t, slices.Collect(h.Balances()), "no bucket before a retry")
	a, err := http.NewRequest(http.MethodGet, "https://A.example:443/x", nil)
	require.NoError(t, err)
	b, err := http.NewRequest(http.MethodGet, "http://b.example:8080/y", nil)
	require.NoError(t, err)
	for range 2 {
		_, err = h.Withdraw(a, classify.Verdict{Decision: classify.Retry})
		require.NoError(t, err)
	}
	_, err = h.Withdraw(b, classify.Verdict{Decision: classify.Retry})
	require.NoError(t, err)

	got := slices.Collect(h.Balances())
	slices.SortFunc(got, func(x, y budget.HostBalance) int { return cmp.Compare(x.Host, y.Host) })
	assert.Equal(t, []budget.HostBalance{
		{Scheme: "https", Host: "a.example", Balance: 6 * budget.Token},
		{Scheme: "http", Host: "b.example:8080", Balance: 8 * budget.Token},
	}, got)
	for _, hb := range got {
		assert.Equal(t, h.Balance(&url.URL{Scheme: hb.Scheme, Host: hb.Host}), hb.Balance)
	}

	n := 0
	for range h.Balances() {
		n++
		break
	}
	assert.Equal(t, 1, n, "the iterator stops when asked")
}

func TestHooksCostNothingOnSuccess(t *testing.T) {
	// With every hook set, a GET that succeeds still allocates nothing.
	tr := New(WithBase(newStub()),
		WithOnRetry(func(RetryEvent) {}),
		WithOnGiveUp(func(GiveUpEvent) {}),
		WithOnGiveUp(func(GiveUpEvent) {}))
	req, err := http.NewRequest(http.MethodGet, "http://svc.test/", nil)
	require.NoError(t, err)
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := tr.RoundTrip(req); err != nil {
			t.Fatal(err)
		}
	})
	assert.Zero(t, allocs)
}

func TestWithOnGiveUpPanicsOnNil(t *testing.T) {
	assert.PanicsWithValue(t, "retryhttp: WithOnGiveUp: nil function", func() { WithOnGiveUp(nil) })
}

func TestTransportBudget(t *testing.T) {
	_, ok := New().Budget().(*budget.PerHost)
	assert.True(t, ok, "default budget")
	b := budget.NewBucket()
	assert.Same(t, b, New(WithBudget(b)).Budget())
	assert.Nil(t, New(WithoutBudget()).Budget())
}
