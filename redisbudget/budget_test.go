package redisbudget

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"testing/synctest"
	"time"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/budget"
	"github.com/retryhttp/retryhttp/classify"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	failed   = classify.Verdict{Decision: classify.Retry}
	timedOut = classify.Verdict{Decision: classify.Retry, Timeout: true}
)

func getReq(t testing.TB, rawURL string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, rawURL, nil)
	require.NoError(t, err)
	return req
}

const apiKey = "retryhttp:budget:test:https://api.example"

func TestBucketLimits(t *testing.T) {
	tests := []struct {
		name string
		opts []budget.Option
		want limits
	}{
		{"defaults", nil, limits{500_000, 5000, 10_000, 1000}},
		{"fractions", []budget.Option{budget.Capacity(100), budget.RetryCost(2.5), budget.TimeoutCost(0), budget.Refund(0.1)}, limits{100_000, 2500, 0, 100}},
		{"free retries", []budget.Option{budget.RetryCost(0)}, limits{500_000, 0, 10_000, 1000}},
		{"no refund", []budget.Option{budget.Refund(0)}, limits{500_000, 5000, 10_000, 0}},
		{"refund beyond capacity fills it", []budget.Option{budget.Capacity(10), budget.TimeoutCost(10), budget.Refund(50)}, limits{10_000, 5000, 10_000, 10_000}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, bucketLimits(tt.opts))
		})
	}
}

func TestInvalidOptionsPanic(t *testing.T) {
	tests := []struct {
		name string
		opt  Option
	}{
		{"retry cost above capacity", WithBucket(budget.Capacity(4))},
		{"processes", WithProcesses(0)},
		{"fallback capacity", WithFallbackCapacity(-1)},
		{"fallback capacity below a cost", WithFallbackCapacity(9)},
		{"timeout", WithTimeout(0)},
		{"flush interval", WithFlushInterval(-time.Second)},
		{"empty hold", WithEmptyHold(-1)},
		{"probe interval", WithProbeInterval(0)},
		{"key TTL", WithKeyTTL(time.Microsecond)},
		{"max hosts", WithMaxHosts(0)},
		{"nil option", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Panics(t, func() { New(fakeClient(), "x", tt.opt) })
		})
	}
	assert.Panics(t, func() { New(nil, "x") })
	assert.Panics(t, func() { New(fakeClient(), "") })
}

func TestWithdrawFromShared(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, s := newFakeBudget(t)
		req := getReq(t, "https://API.example:443/items")
		for i := range 100 {
			took, err := b.Withdraw(req, failed)
			require.NoError(t, err, "retry %d", i)
			require.Equal(t, 5*budget.Token, took)
		}
		_, err := b.Withdraw(req, failed)
		require.ErrorIs(t, err, retryhttp.ErrBudgetExhausted)
		takes, _, _ := s.counts()
		require.Equal(t, 101, takes)
		assert.Equal(t, budget.Millitokens(0), s.bucket(apiKey))

		// Redis has just refused: retries are refused locally for a while.
		_, err = b.Withdraw(req, timedOut)
		require.ErrorIs(t, err, retryhttp.ErrBudgetExhausted)
		takes, _, _ = s.counts()
		require.Equal(t, 101, takes, "a retry within the hold asked Redis")

		time.Sleep(DefaultEmptyHold)
		_, err = b.Withdraw(req, failed)
		require.ErrorIs(t, err, retryhttp.ErrBudgetExhausted)
		takes, _, _ = s.counts()
		require.Equal(t, 102, takes, "a retry after the hold did not ask Redis")

		// Other hosts keep their own buckets.
		took, err := b.Withdraw(getReq(t, "http://other.example/"), timedOut)
		require.NoError(t, err)
		require.Equal(t, 10*budget.Token, took)
		assert.True(t, b.Status().Shared)
	})
}

func TestHoldRefusesOnlyWhatDoesNotFit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, s := newFakeBudget(t)
		s.buckets[apiKey] = 7 * budget.Token
		req := getReq(t, "https://api.example/")
		_, err := b.Withdraw(req, timedOut)
		require.ErrorIs(t, err, retryhttp.ErrBudgetExhausted)
		took, err := b.Withdraw(req, failed) // 5 fits in the 7 left
		require.NoError(t, err)
		require.Equal(t, 5*budget.Token, took)
		takes, _, _ := s.counts()
		require.Equal(t, 2, takes)
	})
}

func TestFreeRetryAsksNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, s := newFakeBudget(t, WithBucket(budget.RetryCost(0)))
		took, err := b.Withdraw(getReq(t, "https://api.example/"), failed)
		require.NoError(t, err)
		require.Zero(t, took)
		takes, _, _ := s.counts()
		require.Zero(t, takes)
	})
}

func TestRefundsAreBatched(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, s := newFakeBudget(t)
		req := getReq(t, "https://api.example/")
		for range 100 {
			_, err := b.Withdraw(req, failed)
			require.NoError(t, err)
		}
		require.Zero(t, s.bucket(apiKey))

		// 1000 successes over one second: one refund command per flush
		// interval.
		for i := range 1000 {
			b.Deposit(req, 0)
			if i%10 == 9 {
				time.Sleep(time.Millisecond * 10)
			}
		}
		time.Sleep(DefaultFlushInterval)
		_, refunds, _ := s.counts()
		// About 100 successes a flush: the bucket is full after five.
		assert.GreaterOrEqual(t, refunds, 5)
		assert.LessOrEqual(t, refunds, 6)
		assert.Equal(t, 500*budget.Token, s.bucket(apiKey))

		// The bucket is full: the host is forgotten, and further successes
		// cost nothing at all.
		require.Empty(t, *b.table.Load())
		for range 1000 {
			b.Deposit(req, 0)
		}
		time.Sleep(time.Second)
		_, after, _ := s.counts()
		assert.Equal(t, refunds, after)
	})
}

func TestSuccessfulRetryRefundsItsCost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, s := newFakeBudget(t, WithBucket(budget.Refund(0)))
		req := getReq(t, "https://api.example/")
		took, err := b.Withdraw(req, timedOut)
		require.NoError(t, err)
		_, err = b.Withdraw(req, failed)
		require.NoError(t, err)
		b.Deposit(req, took) // the retry after the timeout succeeded
		b.Deposit(req, 0)    // refunds nothing
		require.NoError(t, b.Flush())
		assert.Equal(t, 495*budget.Token, s.bucket(apiKey))
	})
}

func TestHealthyTrafficSendsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, s := newFakeBudget(t)
		req := getReq(t, "https://api.example/")
		for range 100 {
			b.Deposit(req, 0)
			time.Sleep(10 * time.Millisecond)
		}
		require.NoError(t, b.Close())
		takes, refunds, probes := s.counts()
		assert.Equal(t, [3]int{0, 0, 0}, [3]int{takes, refunds, probes})
	})
}

func TestCloseFlushes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, s := newFakeBudget(t, WithFlushInterval(time.Hour))
		req := getReq(t, "https://api.example/")
		_, err := b.Withdraw(req, timedOut)
		require.NoError(t, err)
		for range 3 {
			b.Deposit(req, 0)
		}
		require.NoError(t, b.Close())
		assert.Equal(t, 493*budget.Token, s.bucket(apiKey))
		require.NoError(t, b.Close(), "a second Close")
	})
}

func TestHungRedisFallsBackWithinTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, s := newFakeBudget(t, WithProcesses(10))
		req := getReq(t, "https://api.example/")
		_, err := b.Withdraw(req, failed) // Redis grants a retry to the host
		require.NoError(t, err)
		require.NoError(t, b.Flush())
		hang := make(chan struct{})
		s.set(nil, hang)

		start := time.Now()
		took, err := b.Withdraw(req, failed)
		require.NoError(t, err, "the fallback pays")
		require.Equal(t, 5*budget.Token, took)
		assert.Equal(t, DefaultTimeout, time.Since(start))
		st := b.Status()
		assert.True(t, st.Shared, "one slow answer is not an outage")
		assert.ErrorIs(t, st.LastError, errTimeout)

		// A host Redis has not answered for yet gets no retry.
		_, err = b.Withdraw(getReq(t, "https://new.example/"), failed)
		require.ErrorIs(t, err, retryhttp.ErrBudgetExhausted)
		require.ErrorIs(t, err, errSlow)

		// Redis stays silent: the budget moves to its fallback.
		time.Sleep(4*DefaultTimeout + DefaultFlushInterval)
		require.False(t, b.Status().Shared)
		start = time.Now()

		// The fallback holds 500/10 tokens, of which one retry is spent;
		// Redis is not asked again.
		for range 9 {
			_, err := b.Withdraw(req, failed)
			require.NoError(t, err)
		}
		_, err = b.Withdraw(req, failed)
		require.ErrorIs(t, err, retryhttp.ErrBudgetExhausted)
		assert.Zero(t, time.Since(start), "the fallback never waits")
		takes, _, _ := s.counts()
		assert.Equal(t, 3, takes)
		assert.Zero(t, b.fallback.Load().Balance(req.URL))

		// Redis answers again: the hung take completes (and is refunded,
		// since nobody used it), and a probe brings the budget back.
		s.set(nil, nil)
		close(hang)
		time.Sleep(DefaultProbeInterval + DefaultFlushInterval)
		st = b.Status()
		require.True(t, st.Shared)
		_, _, probes := s.counts()
		assert.GreaterOrEqual(t, probes, 1)
		require.NoError(t, b.Flush())
		assert.Equal(t, 495*budget.Token, s.bucket(apiKey), "the late take was refunded")
		took, err = b.Withdraw(req, failed)
		require.NoError(t, err)
		require.Equal(t, 5*budget.Token, took)
		assert.Equal(t, 490*budget.Token, s.bucket(apiKey))
	})
}

func TestSlowRedisStaysShared(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, s := newFakeBudget(t)
		req := getReq(t, "https://api.example/")
		_, err := b.Withdraw(req, failed)
		require.NoError(t, err)
		hang := make(chan struct{})
		s.set(nil, hang)
		go func() {
			time.Sleep(DefaultTimeout + 10*time.Millisecond)
			s.set(nil, nil)
			close(hang)
		}()
		start := time.Now()
		took, err := b.Withdraw(req, failed)
		require.NoError(t, err, "the fallback pays")
		require.Equal(t, 5*budget.Token, took)
		assert.Equal(t, DefaultTimeout, time.Since(start))

		// The answer came 10 ms late: Redis is slow, not down. It took the
		// cost, which goes back, since the fallback paid.
		time.Sleep(time.Second)
		assert.True(t, b.Status().Shared)
		assert.Equal(t, 495*budget.Token, s.bucket(apiKey))
		takes, refunds, _ := s.counts()
		assert.Equal(t, [2]int{2, 1}, [2]int{takes, refunds})
	})
}

func TestErroringRedis(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, s := newFakeBudget(t, WithFallbackCapacity(20))
		req := getReq(t, "https://api.example/")
		s.set(errDown, nil)
		for range 4 {
			_, err := b.Withdraw(req, failed)
			require.NoError(t, err)
		}
		_, err := b.Withdraw(req, failed)
		require.ErrorIs(t, err, retryhttp.ErrBudgetExhausted)
		st := b.Status()
		assert.False(t, st.Shared)
		assert.ErrorIs(t, st.LastError, errDown)

		// Successes on the fallback refill the fallback.
		b.Deposit(req, 5*budget.Token)
		_, err = b.Withdraw(req, failed)
		require.NoError(t, err)

		// Probes keep failing while Redis does; nothing else asks it. A
		// probe that fails at once is sent again, up to probeAttempts.
		time.Sleep(10 * DefaultProbeInterval)
		takes, _, probes := s.counts()
		assert.Equal(t, 1, takes)
		assert.Equal(t, 10*probeAttempts, probes)
		assert.False(t, b.Status().Shared)
		bal, err := b.Balance(context.Background(), req.URL)
		require.NoError(t, err)
		assert.Equal(t, budget.Millitokens(0), bal, "Balance reports the fallback")
	})
}

func TestFailClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, s := newFakeBudget(t, WithFailClosed())
		s.set(errDown, nil)
		_, err := b.Withdraw(getReq(t, "https://api.example/"), failed)
		require.ErrorIs(t, err, retryhttp.ErrBudgetExhausted)
		require.ErrorIs(t, err, errFailClosed)
	})
}

func TestFailedFlushKeepsRefunds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, s := newFakeBudget(t)
		req := getReq(t, "https://api.example/")
		_, err := b.Withdraw(req, failed)
		require.NoError(t, err)
		b.Deposit(req, 5*budget.Token)
		s.set(errDown, nil)
		require.ErrorIs(t, b.Flush(), errDown)
		require.False(t, b.Status().Shared)
		s.set(nil, nil)
		time.Sleep(DefaultProbeInterval + DefaultFlushInterval)
		require.True(t, b.Status().Shared)
		time.Sleep(DefaultFlushInterval)
		assert.Equal(t, 500*budget.Token, s.bucket(apiKey))
	})
}

func TestCallerGivesUpWhileRedisHangs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, s := newFakeBudget(t, WithTimeout(time.Second))
		hang := make(chan struct{})
		s.set(nil, hang)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		req := getReq(t, "https://api.example/").WithContext(ctx)
		start := time.Now()
		_, err := b.Withdraw(req, failed)
		require.ErrorIs(t, err, retryhttp.ErrBudgetExhausted)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, 10*time.Millisecond, time.Since(start))
		assert.True(t, b.Status().Shared, "a caller giving up says nothing about Redis")
		s.set(nil, nil)
		close(hang)
	})
}

func TestTooManyOutstandingCommands(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, s := newFakeBudget(t)
		req := getReq(t, "https://api.example/")
		_, err := b.Withdraw(req, failed)
		require.NoError(t, err)
		b.inflight.Store(maxInflight)
		_, err = b.Withdraw(req, failed)
		require.NoError(t, err, "the fallback pays")
		assert.ErrorIs(t, b.Status().LastError, errBusy)
		takes, _, _ := s.counts()
		assert.Equal(t, 1, takes)
		b.inflight.Store(0)
	})
}

func TestMaxHosts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, s := newFakeBudget(t, WithMaxHosts(2))
		withdraw := func(h string) {
			t.Helper()
			_, err := b.Withdraw(getReq(t, "http://"+h+".example/"), failed)
			require.NoError(t, err)
		}
		hosts := func() []string {
			var names []string
			for k := range *b.table.Load() {
				names = append(names, k.host)
			}
			return names
		}
		withdraw("a")
		withdraw("b")
		b.Deposit(getReq(t, "http://a.example/"), 0)

		// The table is full: hosts with nothing to send make room.
		withdraw("c")
		assert.ElementsMatch(t, []string{"a.example", "c.example"}, hosts())
		b.Deposit(getReq(t, "http://c.example/"), 0)

		// No room at all: the host still draws from Redis, without state.
		withdraw("d")
		assert.ElementsMatch(t, []string{"a.example", "c.example"}, hosts())
		assert.Equal(t, 495*budget.Token, s.bucket("retryhttp:budget:test:http://d.example"))
		b.Deposit(getReq(t, "http://d.example/"), 0) // refunds nothing
		require.NoError(t, b.Flush())
		assert.Equal(t, 495*budget.Token, s.bucket("retryhttp:budget:test:http://d.example"))
		assert.Equal(t, 496*budget.Token, s.bucket("retryhttp:budget:test:http://a.example"))
	})
}

func TestBalance(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, _ := newFakeBudget(t)
		u, _ := url.Parse("https://api.example/")
		_, err := b.Withdraw(&http.Request{URL: u}, timedOut)
		require.NoError(t, err)
		bal, err := b.Balance(context.Background(), u)
		require.NoError(t, err)
		assert.Equal(t, 490*budget.Token, bal)
	})
}

func TestDepositDoesNotAllocate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, _ := newFakeBudget(t)
		req := getReq(t, "https://api.example/")
		other := getReq(t, "https://other.example/")
		assert.Zero(t, testing.AllocsPerRun(100, func() { b.Deposit(req, 0) }), "no host state")
		_, err := b.Withdraw(req, failed)
		require.NoError(t, err)
		assert.Zero(t, testing.AllocsPerRun(100, func() { b.Deposit(req, 0) }), "host state")
		assert.Zero(t, testing.AllocsPerRun(100, func() { b.Deposit(other, 0) }), "another host")
	})
}
