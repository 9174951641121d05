package redisbudget

import (
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/retryhttp/retryhttp/budget"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFallbackPaidRetryCreditsTheFallback checks that the success of a
// retry the fallback paid for goes back to the fallback and never to
// Redis, which did not pay for it: neither when Redis answered the take
// too late (and the cost it took goes back to it), nor when the budget has
// returned to Redis before the retry's answer.
func TestFallbackPaidRetryCreditsTheFallback(t *testing.T) {
	full := 500 * budget.Token
	t.Run("late take", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			b, s := newFakeBudget(t)
			req := getReq(t, "https://api.example/")
			_, err := b.Withdraw(req, failed) // Redis pays, and grants the host a retry
			require.NoError(t, err)
			hang := make(chan struct{})
			s.set(nil, hang)
			time.AfterFunc(DefaultTimeout+10*time.Millisecond, func() { // Redis answers 10 ms late
				s.set(nil, nil)
				close(hang)
			})
			took, err := b.Withdraw(req, failed)
			require.NoError(t, err, "the fallback pays")
			time.Sleep(20 * time.Millisecond) // the late answer comes, and its refund is held
			b.Deposit(req, took)
			require.NoError(t, b.Flush())
			assert.Equal(t, 495*budget.Token, s.bucket(apiKey), "Redis was paid back more than it was paid")
			assert.Equal(t, full, b.fallback.Load().Balance(req.URL), "the fallback was not paid back")
		})
	})
	t.Run("return to Redis", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			b, s, req, took := paidByFallback(t)
			s.set(nil, nil)
			time.Sleep(DefaultProbeInterval)
			require.True(t, b.Status().Shared)
			b.Deposit(req, took) // the retry's answer comes after the return
			require.NoError(t, b.Flush())
			assert.Equal(t, 495*budget.Token, s.bucket(apiKey), "Redis was paid back for a retry it did not pay")
		})
	})
	t.Run("paid back on the fallback", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			b, s, req, took := paidByFallback(t)
			b.Deposit(req, took) // and is paid back at once
			s.set(nil, nil)
			time.Sleep(DefaultProbeInterval)
			require.True(t, b.Status().Shared)
			took, err := b.Withdraw(req, failed)
			require.NoError(t, err)
			b.Deposit(req, took) // Redis paid for this one
			require.NoError(t, b.Flush())
			assert.Equal(t, 495*budget.Token, s.bucket(apiKey), "Redis was not paid back")
		})
	})
}

// TestLateTakeRefundedWithoutHostState checks that a cost Redis takes after
// the retry stopped waiting goes back to Redis for a host beyond
// WithMaxHosts too, which has no state to gather refunds in: a slow Redis
// must not drain such hosts' buckets without a retry being made.
func TestLateTakeRefundedWithoutHostState(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// No flush while the test runs: api.example keeps a refund to send,
		// and so its state, and the table stays full.
		b, s := newFakeBudget(t, WithMaxHosts(1), WithFlushInterval(time.Hour), WithProbeInterval(time.Hour))
		req := getReq(t, "https://api.example/")
		_, err := b.Withdraw(req, failed)
		require.NoError(t, err)
		b.Deposit(req, 0)
		other := getReq(t, "https://other.example/")
		otherKey := "retryhttp:budget:test:https://other.example"
		for range 10 {
			hang := make(chan struct{})
			s.set(nil, hang)
			time.AfterFunc(DefaultTimeout+10*time.Millisecond, func() { // Redis answers 10 ms late
				s.set(nil, nil)
				close(hang)
			})
			_, err := b.Withdraw(other, failed)
			require.ErrorIs(t, err, errSlow, "no state, no grant to go on: refused")
			time.Sleep(20 * time.Millisecond) // the late answer comes, and its refund is sent
		}
		require.Len(t, *b.table.Load(), 1)
		require.NotNil(t, (*b.table.Load())[requestKey(req)])
		assert.Equal(t, 500*budget.Token, s.bucket(otherKey), "Redis kept costs of retries never made")
		assert.True(t, b.Status().Shared)
	})
}

// paidByFallback returns a budget over a fake store that paid one retry
// from Redis and, Redis then down, a second from the fallback, which took
// took.
func paidByFallback(t *testing.T) (*Budget, *fakeStore, *http.Request, budget.Millitokens) {
	t.Helper()
	b, s := newFakeBudget(t)
	req := getReq(t, "https://api.example/")
	_, err := b.Withdraw(req, failed)
	require.NoError(t, err)
	s.set(errDown, nil)
	took, err := b.Withdraw(req, failed)
	require.NoError(t, err, "the fallback pays")
	return b, s, req, took
}
