package redisbudget

import (
	"errors"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/budget"
	"github.com/retryhttp/retryhttp/redisbudget/internal/redisserver"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBadKeyFallsBackAlone checks that a key of the wrong type moves only
// its host to the fallback: the budget stays on Redis for every other host,
// the bad host's retries are paid by one fallback bucket that no probe
// refills, its successes refill that bucket, Redis is asked again once per
// probe interval, and the host returns to Redis once its key holds a bucket.
// The successes of its retries then refill the fallback first, up to what
// the fallback paid for retries that failed (see Deposit).
func TestBadKeyFallsBackAlone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, s := newFakeBudget(t, WithProcesses(4)) // a fallback bucket of 125 tokens: 25 retries
		since := b.Status().Since
		bad, good := getReq(t, "https://api.example/"), getReq(t, "https://good.example/")
		goodKey := "retryhttp:budget:test:https://good.example"
		s.setBad(apiKey, true)

		// A second of retries, one every 2 ms, for each host.
		granted := map[*http.Request]int{}
		for range 500 {
			for _, req := range []*http.Request{bad, good} {
				if _, err := b.Withdraw(req, failed); err == nil {
					granted[req]++
				}
			}
			time.Sleep(2 * time.Millisecond)
		}
		assert.Equal(t, 25, granted[bad], "the bad host's retries: one fallback bucket")
		assert.Equal(t, 100, granted[good], "the good host's retries: its shared bucket")
		assert.Zero(t, s.bucket(goodKey))
		st := b.Status()
		assert.True(t, st.Shared, "a bad key moved the budget to the fallback")
		assert.Equal(t, since, st.Since)
		assert.True(t, isKeyError(st.LastError), "%v", st.LastError)
		takes, _, probes := s.counts()
		assert.Zero(t, probes)
		assert.LessOrEqual(t, takes, 100+1+10+3, "Redis was asked about the bad key more than once per probe interval")

		// Its successes refill its fallback bucket, and send nothing.
		b.Deposit(bad, 5*budget.Token)
		require.NoError(t, b.Flush())
		_, refunds, _ := s.counts()
		assert.Zero(t, refunds)
		assert.Equal(t, 5*budget.Token, b.fallback.Load().Balance(bad.URL))

		// The key is mended: within a probe interval the host is back.
		s.setBad(apiKey, false)
		time.Sleep(DefaultProbeInterval)
		took, err := b.Withdraw(bad, failed)
		require.NoError(t, err)
		require.Equal(t, 5*budget.Token, took)
		assert.Equal(t, 495*budget.Token, s.bucket(apiKey), "Redis paid")
		for range 24 + 1 {
			b.Deposit(bad, took)
		}
		require.NoError(t, b.Flush())
		assert.Equal(t, 500*budget.Token, s.bucket(apiKey), "the 25th success did not go back to Redis")
		assert.Equal(t, 125*budget.Token, b.fallback.Load().Balance(bad.URL))
	})
}

// TestBadKeyInFlush checks that a refund to a key of the wrong type is
// dropped without moving the budget to the fallback or keeping the other
// hosts' refunds from Redis.
func TestBadKeyInFlush(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, s := newFakeBudget(t, WithFlushInterval(time.Hour))
		hosts := []string{"a", "b", "c"}
		for _, h := range hosts {
			req := getReq(t, "https://"+h+".example/")
			_, err := b.Withdraw(req, failed)
			require.NoError(t, err)
			b.Deposit(req, 5*budget.Token)
		}
		s.setBad("retryhttp:budget:test:https://b.example", true)
		require.NoError(t, b.Flush())
		assert.True(t, b.Status().Shared)
		assert.Equal(t, 500*budget.Token, s.bucket("retryhttp:budget:test:https://a.example"))
		assert.Equal(t, 500*budget.Token, s.bucket("retryhttp:budget:test:https://c.example"))
		assert.True(t, isKeyError(b.Status().LastError))
	})
}

// TestProbeWritesTheFailedKey checks that a probe asks Redis to write the
// key whose command failed, and that only a probe that succeeds brings the
// budget back.
func TestProbeWritesTheFailedKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, s := newFakeBudget(t)
		s.set(errDown, nil)
		_, err := b.Withdraw(getReq(t, "https://api.example/"), failed)
		require.NoError(t, err)
		require.False(t, b.Status().Shared)
		time.Sleep(3 * DefaultProbeInterval)
		assert.False(t, b.Status().Shared)
		_, _, probes := s.counts()
		assert.Equal(t, 3*probeAttempts, probes)
		assert.Equal(t, apiKey, s.probed)
		s.set(nil, nil)
		time.Sleep(DefaultProbeInterval)
		assert.True(t, b.Status().Shared)
	})
}

// retryStorm retries for every request from every budget, from two
// goroutines each, one retry every 2 ms per goroutine, for d, as callers
// do against a dependency that is down. It returns the retries granted per
// budget and request, and the longest a Withdraw took.
func retryStorm(t *testing.T, budgets []*Budget, reqs []*http.Request, d time.Duration) ([][]int, time.Duration) {
	t.Helper()
	counts := make([][]atomic.Int64, len(budgets))
	var longest atomic.Int64
	var wg sync.WaitGroup
	end := time.Now().Add(d)
	for i, b := range budgets {
		counts[i] = make([]atomic.Int64, len(reqs))
		for j, req := range reqs {
			for range 2 {
				wg.Go(func() {
					tick := time.NewTicker(2 * time.Millisecond) // the pace of the retries, not a synchronisation
					defer tick.Stop()
					for now := range tick.C {
						if now.After(end) {
							return
						}
						start := time.Now()
						_, err := b.Withdraw(req, failed)
						took := int64(time.Since(start))
						for cur := longest.Load(); took > cur && !longest.CompareAndSwap(cur, took); cur = longest.Load() {
						}
						if err == nil {
							counts[i][j].Add(1)
						} else {
							assert.ErrorIs(t, err, retryhttp.ErrBudgetExhausted)
						}
					}
				})
			}
		}
	}
	wg.Wait()
	granted := make([][]int, len(budgets))
	for i := range counts {
		for j := range counts[i] {
			granted[i] = append(granted[i], int(counts[i][j].Load()))
		}
	}
	return granted, time.Duration(longest.Load())
}

// waitShared waits, boundedly, for b to return to Redis after a fault
// ends: the probes that bring it back run on a timer, and no event says
// when Redis accepts writes again.
func waitShared(t *testing.T, b *Budget) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !b.Status().Shared {
		require.True(t, time.Now().Before(deadline), "the budget did not return to Redis: %v", b.Status().LastError)
		time.Sleep(10 * time.Millisecond) // waiting on the probe's timer and the redis-server process
	}
}

// heardFrom withdraws a retry of req from b once Redis has answered for
// it, so that b holds a fallback share: on a loaded machine Redis's first
// answers, the script's load among them, can take longer than the timeout.
// Each refused try waited for Redis, at most the timeout.
func heardFrom(t *testing.T, b *Budget, req *http.Request) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := b.Withdraw(req, failed)
		if err == nil {
			return
		}
		require.True(t, time.Now().Before(deadline), "Redis did not answer: %v", err)
		waitShared(t, b)
	}
}

// faultOpts are the options of the processes in the Redis fault tests:
// fallback buckets of 125 tokens (25 retries), and a probe every 50 ms, so
// that a probe that brought the budget back to a Redis that still refuses
// would show as many times that.
var faultOpts = []Option{WithProcesses(4), WithProbeInterval(50 * time.Millisecond)}

// TestRedisRefusingWritesKeepsTheBound checks, against a real redis-server
// that answers PING but refuses every write for 3 s, as a replica left
// behind by a failover does (READONLY) and as one at maxmemory with
// noeviction does (OOM), that two processes retry no more than one fallback
// bucket each, that no retry waits past the timeout, and that each returns
// to Redis once it accepts writes again.
func TestRedisRefusingWritesKeepsTheBound(t *testing.T) {
	tests := []struct {
		name        string
		code        string // the kind of Redis's error reply
		start, mend func(t *testing.T, s, other *redisserver.Server)
	}{
		{"read-only replica", "READONLY",
			func(t *testing.T, s, primary *redisserver.Server) {
				command(t, s, "REPLICAOF", "127.0.0.1", strconv.Itoa(primary.Port))
			},
			func(t *testing.T, s, _ *redisserver.Server) { command(t, s, "REPLICAOF", "NO", "ONE") }},
		{"maxmemory with noeviction", "OOM",
			func(t *testing.T, s, _ *redisserver.Server) {
				command(t, s, "CONFIG", "SET", "maxmemory-policy", "noeviction")
				command(t, s, "CONFIG", "SET", "maxmemory", "1")
			},
			func(t *testing.T, s, _ *redisserver.Server) { command(t, s, "CONFIG", "SET", "maxmemory", "0") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, other := startRedis(t), startRedis(t)
			req := getReq(t, "https://api.example/")
			budgets := []*Budget{
				newRedisBudget(t, newClient(t, s), "refusing", faultOpts...),
				newRedisBudget(t, newClient(t, s), "refusing", faultOpts...),
			}
			for _, b := range budgets {
				heardFrom(t, b, req) // a fallback share
			}

			tt.start(t, s, other)
			granted, longest := retryStorm(t, budgets, []*http.Request{req}, 3*time.Second)
			t.Logf("retries granted while Redis refused writes: %v; longest wait %v", granted, longest)
			for i, b := range budgets {
				assert.LessOrEqual(t, granted[i][0], 25, "process %d: more than its fallback bucket", i)
				st := b.Status()
				assert.False(t, st.Shared, "process %d went back to a Redis that refuses writes", i)
				// The last error is the last probe's: the refusal, or, on a
				// busy machine, a probe not answered within the timeout.
				assert.True(t, redis.HasErrorPrefix(st.LastError, tt.code) || errors.Is(st.LastError, errTimeout),
					"process %d: %v", i, st.LastError)
			}
			assert.LessOrEqual(t, longest, DefaultTimeout+slack)

			tt.mend(t, s, other)
			for _, b := range budgets {
				waitShared(t, b)
			}
			// Back on Redis, with a fresh fallback for the next fault.
			for _, b := range budgets {
				took, err := b.Withdraw(req, failed)
				require.NoError(t, err)
				assert.Equal(t, 5*budget.Token, took)
			}
		})
	}
}

// TestRedisWrongTypeKeyKeepsTheBound checks, against a real redis-server
// where one host's key holds a hash for 3 s, that two processes retry for
// that host no more than one fallback bucket each, and for a healthy host
// no more than its shared bucket, without leaving Redis.
func TestRedisWrongTypeKeyKeepsTheBound(t *testing.T) {
	s := startRedis(t)
	command(t, s, "HSET", "retryhttp:budget:wrongtype:https://api.example", "owner", "another-application")
	bad, good := getReq(t, "https://api.example/"), getReq(t, "https://good.example/")
	// A long timeout: a take the machine is too busy to see answered in
	// 50 ms would be paid by the fallback, and blur the good host's count.
	opts := append(faultOpts[:len(faultOpts):len(faultOpts)], WithTimeout(time.Second))
	budgets := []*Budget{
		newRedisBudget(t, newClient(t, s), "wrongtype", opts...),
		newRedisBudget(t, newClient(t, s), "wrongtype", opts...),
	}
	var since []time.Time
	for _, b := range budgets {
		<-b.warmed
		since = append(since, b.Status().Since)
	}

	granted, longest := retryStorm(t, budgets, []*http.Request{bad, good}, 3*time.Second)
	t.Logf("retries granted [bad good] per process: %v; longest wait %v", granted, longest)
	for i, b := range budgets {
		assert.LessOrEqual(t, granted[i][0], 25, "process %d: more than its fallback bucket for the bad host", i)
		st := b.Status()
		assert.True(t, st.Shared, "process %d left Redis: %v", i, st.LastError)
		assert.Equal(t, since[i], st.Since, "process %d left Redis and came back", i)
	}
	assert.Equal(t, 100, granted[0][1]+granted[1][1], "the good host: not its shared bucket")
	assert.LessOrEqual(t, longest, time.Second+slack)
}

// command sends one command to s and requires it to succeed.
func command(t *testing.T, s *redisserver.Server, words ...string) {
	t.Helper()
	_, err := s.Command(words...)
	require.NoError(t, err, "%v", words)
}
