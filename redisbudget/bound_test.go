package redisbudget

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/budget"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNewProcessInOutageHasNoFallback checks that a process that starts
// while Redis fails, however it fails, brings no budget of its own: every
// retry is refused until Redis answers, while a process that heard from
// Redis before the outage spends its share.
func TestNewProcessInOutageHasNoFallback(t *testing.T) {
	for name, fail := range map[string]func(*fakeStore, chan struct{}){
		"refused": func(s *fakeStore, _ chan struct{}) { s.set(errDown, nil) },
		"hung":    func(s *fakeStore, hang chan struct{}) { s.set(nil, hang) },
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				hang := make(chan struct{})
				defer close(hang)
				req := getReq(t, "https://api.example/")

				// Before the outage: heard from Redis.
				old, oldStore := newFakeBudget(t, WithProcesses(50))
				_, err := old.Withdraw(req, failed)
				require.NoError(t, err)
				fail(oldStore, hang)

				// During it: a new process.
				b, _ := newFakeBudgetWith(t, func(s *fakeStore) { fail(s, hang) }, WithProcesses(50))
				for range 5 {
					start := time.Now()
					_, err := b.Withdraw(req, failed)
					require.ErrorIs(t, err, retryhttp.ErrBudgetExhausted)
					assert.LessOrEqual(t, time.Since(start), DefaultTimeout)
				}
				assert.False(t, b.Status().Shared)

				// The old process's fallback holds 500/50 = 10 tokens.
				granted := 0
				for range 5 {
					if _, err := old.Withdraw(req, failed); err == nil {
						granted++
					}
					time.Sleep(4 * DefaultTimeout) // a hung Redis moves it to the fallback
				}
				assert.Equal(t, 2, granted)
			})
		})
	}
}

// TestStaleKnowledgeHasNoFallback checks that a process that last heard
// from Redis longer ago than the key TTL has no fallback share either: the
// buckets it knew have expired.
func TestStaleKnowledgeHasNoFallback(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		req := getReq(t, "https://api.example/")
		b, s := newFakeBudget(t, WithKeyTTL(time.Second))
		_, err := b.Withdraw(req, failed)
		require.NoError(t, err)
		time.Sleep(2 * time.Second) // no command since: the TTL passes

		s.set(errDown, nil)
		_, err = b.Withdraw(req, failed)
		require.ErrorIs(t, err, errUnheard)
		_, err = b.Withdraw(req, failed)
		require.ErrorIs(t, err, errUnheard)

		fresh, fs := newFakeBudget(t, WithKeyTTL(time.Second))
		_, err = fresh.Withdraw(req, failed)
		require.NoError(t, err)
		fs.set(errDown, nil)
		_, err = fresh.Withdraw(req, failed)
		require.NoError(t, err, "heard within the TTL: the fallback pays")
	})
}

// TestConcurrentRefusalsShareOneTake checks that retries for one host
// that arrive while a take is in flight wait for it, and that the refusal
// it brings refuses them all, and every retry for the hold, without a
// command of their own.
func TestConcurrentRefusalsShareOneTake(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		req := getReq(t, "https://api.example/")
		b, s := newFakeBudget(t, WithBucket(budget.Capacity(5), budget.TimeoutCost(5)))
		_, err := b.Withdraw(req, failed) // empties the bucket
		require.NoError(t, err)

		hang := make(chan struct{})
		s.set(nil, hang)
		const n = 32
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for range n {
			wg.Go(func() {
				_, err := b.Withdraw(req, failed)
				errs <- err
			})
		}
		synctest.Wait()
		takes, _, _ := s.counts()
		assert.Equal(t, 2, takes, "one take in flight, the rest waiting for it")
		s.set(nil, nil)
		close(hang)
		wg.Wait()
		close(errs)
		for err := range errs {
			assert.ErrorIs(t, err, errEmpty)
		}
		for range 10 {
			_, err := b.Withdraw(req, failed)
			assert.ErrorIs(t, err, errEmpty)
		}
		takes, _, _ = s.counts()
		assert.Equal(t, 2, takes, "refused for the hold without asking Redis")
	})
}

// TestLateRefusalIsHeld checks that a refusal Redis gives after the retry
// stopped waiting for it is remembered as one given in time is.
func TestLateRefusalIsHeld(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		req := getReq(t, "https://api.example/")
		b, s := newFakeBudget(t, WithBucket(budget.Capacity(5), budget.TimeoutCost(5)))
		_, err := b.Withdraw(req, failed)
		require.NoError(t, err)

		hang := make(chan struct{})
		s.set(nil, hang)
		go func() {
			time.Sleep(DefaultTimeout + 10*time.Millisecond)
			s.set(nil, nil)
			close(hang)
		}()
		_, err = b.Withdraw(req, failed)
		require.NoError(t, err, "Redis granted the last retry, so the fallback pays for this one")
		time.Sleep(20 * time.Millisecond) // the late refusal arrives
		_, err = b.Withdraw(req, failed)
		require.ErrorIs(t, err, errEmpty)
		takes, _, _ := s.counts()
		assert.Equal(t, 2, takes)
	})
}

// TestWaitIsOneTimeout checks that a retry never waits for Redis longer
// than the timeout in all, queueing behind another retry's take included.
func TestWaitIsOneTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		req := getReq(t, "https://api.example/")
		b, s := newFakeBudget(t, WithProbeInterval(time.Hour))
		_, err := b.Withdraw(req, failed)
		require.NoError(t, err)
		hang := make(chan struct{})
		defer close(hang)
		s.set(nil, hang)

		var wg sync.WaitGroup
		waits := make(chan time.Duration, 8)
		for i := range 8 {
			wg.Go(func() {
				time.Sleep(time.Duration(i) * 5 * time.Millisecond)
				start := time.Now()
				b.Withdraw(req, failed)
				waits <- time.Since(start)
			})
		}
		wg.Wait()
		close(waits)
		for w := range waits {
			assert.LessOrEqual(t, w, DefaultTimeout)
		}
	})
}

// takeCounter is a go-redis hook that counts the scripts sent.
type takeCounter struct {
	mu    sync.Mutex
	takes int
}

func (c *takeCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *takeCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if n := cmd.Name(); n == "evalsha" || n == "eval" {
			c.mu.Lock()
			c.takes++
			c.mu.Unlock()
		}
		return next(ctx, cmd)
	}
}

func (c *takeCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (c *takeCounter) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.takes
}

// TestRedisRefusalsCostOneCommand checks, against a real redis-server,
// that 64 concurrent retries for a host whose bucket is empty send one
// command between them, and that retries for the rest of the hold send
// none.
func TestRedisRefusalsCostOneCommand(t *testing.T) {
	s := startRedis(t)
	c := newClient(t, s)
	var counter takeCounter
	c.AddHook(&counter)
	b := newRedisBudget(t, c, "refusals", WithBucket(budget.Capacity(5), budget.TimeoutCost(5)), WithEmptyHold(time.Minute))
	req := getReq(t, "https://api.example/")
	_, err := b.Withdraw(req, failed)
	require.NoError(t, err)
	before := counter.count()

	var wg sync.WaitGroup
	var mu sync.Mutex
	refused := 0
	for range 64 {
		wg.Go(func() {
			if _, err := b.Withdraw(req, failed); err != nil {
				mu.Lock()
				refused++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	assert.Equal(t, 64, refused)
	assert.Equal(t, 1, counter.count()-before, "scripts sent for 64 refused retries")
	for range 100 {
		_, err := b.Withdraw(req, failed)
		require.ErrorIs(t, err, retryhttp.ErrBudgetExhausted)
	}
	assert.Equal(t, 1, counter.count()-before, "scripts sent for the rest of the hold")
}

// TestRedisNewProcessWhileDown checks, against a real redis-server that is
// killed, that a budget made while it is down refuses every retry, and
// uses the shared bucket once Redis is back.
func TestRedisNewProcessWhileDown(t *testing.T) {
	s := startRedis(t)
	req := getReq(t, "https://api.example/")
	old := newRedisBudget(t, newClient(t, s), "down", WithProcesses(50), WithProbeInterval(time.Hour))
	_, err := old.Withdraw(req, failed)
	require.NoError(t, err)

	s.Kill()
	b := newRedisBudget(t, newClient(t, s), "down", WithProcesses(50), WithProbeInterval(time.Hour))
	<-b.warmed
	for range 5 {
		_, err := b.Withdraw(req, failed)
		require.ErrorIs(t, err, retryhttp.ErrBudgetExhausted)
	}

	require.NoError(t, s.Restart())
	b.probe()
	require.True(t, b.Status().Shared)
	took, err := b.Withdraw(req, failed)
	require.NoError(t, err)
	assert.Equal(t, 5*budget.Token, took)
}
