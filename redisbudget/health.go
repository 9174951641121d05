package redisbudget

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/retryhttp/retryhttp/budget"
)

// The health of a budget is one of two states, and that of each host it
// keeps state for one of two more:
//
//   - Shared (onRedis set): retries are paid from the buckets in Redis, and
//     successes refund them. A command that fails with any error but a key's
//     fault (see store), or that Redis leaves unanswered for the silence
//     limit, moves the budget to fallback (fail).
//   - Fallback: every retry is paid by the fallback buckets in the process,
//     and Redis is not asked, except by a probe every probe interval that
//     runs a script writing a bucket, as a take does. The probe's success
//     moves the budget back to shared (resume), with fresh fallback buckets;
//     nothing else does, so a Redis that answers but refuses writes keeps
//     the budget on one fallback bucket per host.
//
// While the budget is shared, a host's key is usable, or bad (host.bad) once
// a command on it fails with a key's fault: that host alone is paid by the
// fallback, and one of its retries per probe interval asks Redis again.

// probeAttempts bounds the commands of one probe.
const probeAttempts = 4

// warmTimeout bounds how long a new Budget waits in the background for
// Redis to load its scripts.
const warmTimeout = time.Second

// heard records an answer from Redis.
func (b *Budget) heard() { b.heardAt.Store(b.mono()) }

// knowsRedis reports whether Redis answered this process within the key
// TTL: only then do its fallback buckets hold a share of a budget that Redis
// still keeps. A process that never heard from Redis, or not since the
// buckets it knew expired, has no share to fall back on.
func (b *Budget) knowsRedis(now int64) bool {
	at := b.heardAt.Load()
	return at != 0 && now-at <= int64(b.cfg.keyTTL)
}

// loop sends refunds every flush interval while on Redis, and probes Redis
// every probe interval while on the fallback, until Close.
func (b *Budget) loop() {
	defer close(b.done)
	b.warm()
	close(b.warmed)
	tick := time.NewTicker(min(b.cfg.flushInterval, b.cfg.probeInterval))
	defer tick.Stop()
	var lastFlush, lastProbe time.Time
	for {
		select {
		case <-b.stop:
			return
		case now := <-tick.C:
			if b.onRedis.Load() && b.stuck(b.mono()) {
				b.fail(errTimeout)
			}
			if b.onRedis.Load() {
				if now.Sub(lastFlush) >= b.cfg.flushInterval {
					lastFlush = now
					b.flush()
				}
			} else if now.Sub(lastProbe) >= b.cfg.probeInterval {
				lastProbe = now
				b.probe()
			}
		}
	}
}

// warm loads the scripts, and so opens a connection, before the first retry
// needs them. It waits longer than the timeout, since no request waits for
// it, and falls back if Redis fails or does not answer.
func (b *Budget) warm() {
	ctx, cancel := context.WithTimeout(context.Background(), warmTimeout)
	defer cancel()
	done := make(chan error, 1)
	b.inflight.Add(1)
	go func() {
		defer b.inflight.Add(-1)
		done <- b.store.load(ctx)
	}()
	timer := time.NewTimer(warmTimeout)
	defer timer.Stop()
	select {
	case err := <-done:
		if err != nil {
			b.fail(err)
		} else {
			b.heard()
		}
	case <-timer.C:
		b.fail(errTimeout)
	case <-b.stop:
	}
}

// probe asks Redis to do what a take does, run a script that writes a
// bucket, and returns to Redis if it does: a Redis that answers PING but
// refuses writes (READONLY from a replica, OOM at maxmemory with
// noeviction) or scripts (BUSY, NOPERM) keeps the budget on its fallback.
// The script writes the key of the command that failed last, leaving it as
// it was, so that on a Redis Cluster it asks the node that failed; a key of
// the wrong type there answers for Redis all the same. A probe that fails
// at once is sent again, a few times: after a restart of Redis, the
// client's pool holds connections that the restart broke, and each failed
// command discards some of them.
func (b *Budget) probe() {
	up := func(err error) bool { return err == nil || isKeyError(err) }
	late := func(err error) {
		if up(err) {
			b.resume() // answered, if slowly
		}
	}
	key := b.prefix + "probe"
	if k := b.suspect.Load(); k != nil {
		key = *k
	}
	probe := func(ctx context.Context) error { return b.store.probe(ctx, key) }
	for range probeAttempts {
		err := b.call(context.Background(), b.cfg.timeout, probe, late)
		if up(err) {
			b.resume()
			return
		}
		b.noteError(err)
		if errors.Is(err, errTimeout) || errors.Is(err, errBusy) {
			return
		}
	}
}

// noteError records err as the last Redis error.
func (b *Budget) noteError(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.status.LastError, b.status.LastErrorAt = err, b.now()
}

// failOn is fail for err, the failure of a command on key, which the
// probes then write.
func (b *Budget) failOn(key string, err error) {
	b.suspect.Store(&key)
	b.fail(err)
}

// fail records err and moves the budget to its fallback buckets, which are
// full unless slow answers have drawn on them since the budget last
// returned to Redis.
func (b *Budget) fail(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	b.status.LastError, b.status.LastErrorAt = err, now
	if !b.onRedis.Load() {
		return
	}
	b.onRedis.Store(false)
	b.status.Shared, b.status.Since = false, now
	if b.cfg.logger != nil {
		b.cfg.logger.LogAttrs(context.Background(), slog.LevelWarn, "redisbudget: Redis unavailable, retries use the fallback budget",
			slog.String("budget", b.name), slog.String("error", err.Error()))
	}
}

// resume moves the budget back to Redis.
func (b *Budget) resume() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.onRedis.Load() {
		return
	}
	// Refusals seen before the failure are stale, and the next outage
	// starts with full fallback buckets.
	for _, h := range *b.table.Load() {
		h.refused.Store(nil)
	}
	b.fallback.Store(budget.NewPerHost(b.fbLimits...))
	b.epoch.Add(1)
	b.onRedis.Store(true)
	b.status.Shared, b.status.Since = true, b.now()
	if b.cfg.logger != nil {
		b.cfg.logger.LogAttrs(context.Background(), slog.LevelInfo, "redisbudget: Redis answers again, retries use the shared budget",
			slog.String("budget", b.name))
	}
}
