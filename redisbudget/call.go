package redisbudget

import (
	"context"
	"errors"
	"sync/atomic"
	"time"
)

// maxInflight bounds the Redis commands a Budget leaves running: past it,
// a hung Redis costs no more goroutines, and retries use the fallback.
const maxInflight = 256

// Errors of a command that call stopped waiting for, or did not send.
var (
	errTimeout = errors.New("redisbudget: Redis did not answer within the timeout")
	errBusy    = errors.New("redisbudget: too many Redis commands outstanding")
)

// call runs fn in a goroutine of its own and waits for it no longer than
// wait, or until ctx is done, so that a Redis client that ignores
// deadlines or retries for seconds cannot hold the caller. If call stops
// waiting first, it returns an error, and when fn returns its goroutine
// moves the budget to the fallback if fn failed other than by a key's
// fault, and runs late, if given,
// with fn's error. fn's context keeps ctx's values but not its
// cancellation, and ends after the silence limit, so that a slow answer can
// still arrive (and show that Redis is slow rather than down).
func (b *Budget) call(ctx context.Context, wait time.Duration, fn func(context.Context) error, late func(error)) error {
	if b.inflight.Add(1) > maxInflight {
		b.inflight.Add(-1)
		return errBusy
	}
	var (
		done   = make(chan struct{})
		state  atomic.Int32 // 0 running, 1 answered, 2 abandoned
		result error
	)
	epoch := b.epoch.Load()
	go func() {
		defer b.inflight.Add(-1)
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), b.silence())
		err := fn(cctx)
		cancel()
		if err == nil {
			b.heard()
		}
		result = err
		if state.CompareAndSwap(0, 1) {
			close(done)
			return
		}
		b.answered()
		if err != nil && !isKeyError(err) && b.epoch.Load() == epoch {
			// A failure from before the budget last returned to Redis
			// is old news, and a key's fault is that key's alone.
			b.fail(err)
		}
		if late != nil {
			late(err)
		}
	}()
	timer := time.NewTimer(max(wait, 0))
	defer timer.Stop()
	var stopped error
	select {
	case <-done:
		return result
	case <-timer.C:
		stopped = errTimeout
	case <-ctx.Done():
		stopped = ctx.Err()
	}
	if state.CompareAndSwap(0, 2) {
		b.abandon()
		return stopped
	}
	<-done // answered just now
	return result
}

// abandon counts a command that call stopped waiting for.
func (b *Budget) abandon() {
	if b.abandoned.Add(1) == 1 {
		b.silentSince.Store(b.mono())
	}
}

// answered counts the late answer of an abandoned command.
func (b *Budget) answered() {
	if b.abandoned.Add(-1) == 0 {
		b.silentSince.Store(0)
	}
}

// silence returns how long Redis may leave a command unanswered before the
// budget takes it to be down rather than slow: four timeouts.
func (b *Budget) silence() time.Duration { return 4 * b.cfg.timeout }

// stuck reports whether some command has been left unanswered for the
// silence limit, without a pause: Redis is down or hung, and the client
// ignores deadlines.
func (b *Budget) stuck(now int64) bool {
	since := b.silentSince.Load()
	return b.abandoned.Load() > 0 && since != 0 && now-since >= int64(b.silence())
}
