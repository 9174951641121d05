package redisbudget

import (
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/retryhttp/retryhttp/budget"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// steppedClock is a wall clock that an operator or NTP can step: the
// bubble's clock moved by step.
type steppedClock struct{ step atomic.Int64 }

func (c *steppedClock) now() time.Time { return time.Now().Add(time.Duration(c.step.Load())) }

// set steps the clock to d from the true time.
func (c *steppedClock) set(d time.Duration) { c.step.Store(int64(d)) }

// withWallClock makes a budget read the wall clock from c.
func withWallClock(c *steppedClock) Option { return func(cfg *config) { cfg.now = c.now } }

// TestWallClockStepsTimeNothing checks that the hold, the silence limit
// and the key TTL are timed on the monotonic clock: stepping the wall clock
// by an hour either way, as an operator or NTP may, changes none of them.
func TestWallClockStepsTimeNothing(t *testing.T) {
	for _, step := range []time.Duration{-time.Hour, time.Hour} {
		t.Run(step.String(), func(t *testing.T) {
			t.Run("hold", func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					var clock steppedClock
					b, s := newFakeBudget(t, withWallClock(&clock), WithBucket(budget.Capacity(5), budget.TimeoutCost(5)))
					req := getReq(t, "https://api.example/")
					_, err := b.Withdraw(req, failed)
					require.NoError(t, err)
					_, err = b.Withdraw(req, failed) // refused: held for 100 ms
					require.ErrorIs(t, err, errEmpty)
					clock.set(step)
					s.refund(t.Context(), apiKey, 5*budget.Token) // another process's success
					_, err = b.Withdraw(req, failed)
					require.ErrorIs(t, err, errEmpty, "the hold ended early")
					takes, _, _ := s.counts()
					require.Equal(t, 2, takes)
					time.Sleep(DefaultEmptyHold)
					_, err = b.Withdraw(req, failed)
					require.NoError(t, err, "the hold outlived its 100 ms")
				})
			})
			t.Run("key TTL", func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					var clock steppedClock
					b, s := newFakeBudget(t, withWallClock(&clock))
					req := getReq(t, "https://api.example/")
					_, err := b.Withdraw(req, failed)
					require.NoError(t, err)
					clock.set(step)
					s.set(errDown, nil)
					_, err = b.Withdraw(req, failed)
					require.NoError(t, err, "heard from Redis a moment ago: the fallback pays")
					time.Sleep(2 * DefaultKeyTTL)
					_, err = b.Withdraw(req, failed)
					require.ErrorIs(t, err, errUnheard, "not heard from Redis for two TTLs")
				})
			})
			t.Run("silence", func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					var clock steppedClock
					b, s := newFakeBudget(t, withWallClock(&clock), WithProbeInterval(time.Hour))
					req := getReq(t, "https://api.example/")
					_, err := b.Withdraw(req, failed)
					require.NoError(t, err)
					hang := make(chan struct{})
					s.set(nil, hang)
					_, err = b.Withdraw(req, failed) // abandoned after the timeout
					require.NoError(t, err)
					clock.set(step)

					// Slow, not silent: less than four timeouts pass.
					time.Sleep(2 * DefaultTimeout)
					synctest.Wait()
					assert.True(t, b.Status().Shared, "a slow answer was taken for silence")

					// Silent: four timeouts and a tick of the loop pass.
					time.Sleep(2*DefaultTimeout + DefaultFlushInterval)
					synctest.Wait()
					assert.False(t, b.Status().Shared, "a silent Redis was not noticed")
					s.set(nil, nil)
					close(hang)
				})
			})
		})
	}
}
