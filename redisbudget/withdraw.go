package redisbudget

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/budget"
	"github.com/retryhttp/retryhttp/classify"
)

// Errors that Withdraw returns, all wrapping retryhttp.ErrBudgetExhausted.
var (
	errEmpty      = fmt.Errorf("redisbudget: shared bucket empty: %w", retryhttp.ErrBudgetExhausted)
	errFallback   = fmt.Errorf("redisbudget: fallback bucket empty: %w", retryhttp.ErrBudgetExhausted)
	errFailClosed = fmt.Errorf("redisbudget: Redis unavailable and the budget fails closed: %w", retryhttp.ErrBudgetExhausted)
	errSlow       = fmt.Errorf("redisbudget: Redis did not answer in time, and its last answer for the host granted no retry: %w", retryhttp.ErrBudgetExhausted)
	errUnheard    = fmt.Errorf("redisbudget: Redis unavailable, and this process has not heard from it within the key TTL, so it has no fallback budget: %w", retryhttp.ErrBudgetExhausted)
)

// Withdraw takes the cost of a retry of req after verdict v from the bucket
// of req's host and returns it, or returns an error wrapping
// retryhttp.ErrBudgetExhausted if the bucket holds less. A cost of 0 always
// succeeds and asks nothing. On Redis it costs one command, unless Redis has
// just refused a retry for the host or the host's key is bad; on the
// fallback, none. It waits for Redis no longer than the timeout, nor once
// req's context is done.
func (b *Budget) Withdraw(req *http.Request, v classify.Verdict) (budget.Millitokens, error) {
	cost := b.cost(v)
	if cost == 0 {
		return 0, nil
	}
	if !b.onRedis.Load() {
		return b.withdrawFallback(req, v)
	}
	k := requestKey(req)
	h := b.host(k)
	deadline := time.Now().Add(b.cfg.timeout)
	var key string
	if h != nil {
		if bad, due := h.badKey(b.mono()); bad && !due {
			return b.withdrawFallback(req, v)
		}
		if h.holds(cost, b.mono()) {
			return 0, errEmpty
		}
		// One take per host at a time: concurrent retries for the host
		// wait for the one in flight, and a refusal it brings refuses
		// them all without a command of their own.
		if err := h.lock(req.Context(), deadline); err != nil {
			return b.unanswered(req, v, h, err)
		}
		defer h.unlock()
		if bad, due := h.badKey(b.mono()); bad && !due {
			return b.withdrawFallback(req, v)
		}
		if h.holds(cost, b.mono()) {
			return 0, errEmpty
		}
		key = h.key
	} else {
		key = redisKey(b.prefix, k)
	}
	ok, balance, err := b.take(req.Context(), time.Until(deadline), h, key, cost)
	switch {
	case err != nil && req.Context().Err() != nil:
		// The caller gave up, which says nothing about Redis, and the
		// Transport will not retry.
		return 0, fmt.Errorf("redisbudget: %w: %w", retryhttp.ErrBudgetExhausted, req.Context().Err())
	case errors.Is(err, errTimeout) || errors.Is(err, errBusy):
		b.noteError(err)
		return b.unanswered(req, v, h, err)
	case isKeyError(err):
		// Redis answers, but this host's key holds no bucket: only this
		// host falls back.
		b.badKeyFound(h, err)
		return b.withdrawFallback(req, v)
	case err != nil:
		b.failOn(key, err)
		return b.withdrawFallback(req, v)
	case !ok:
		b.keyUsable(h)
		b.refused(h, balance)
		return 0, errEmpty
	}
	if h != nil {
		b.keyUsable(h)
		if !h.granted.Load() {
			h.granted.Store(true)
		}
	}
	return cost, nil
}

// badKeyFound records that h's key holds no bucket (err): the host's
// retries are paid by the fallback, and Redis is asked again for it after a
// probe interval.
func (b *Budget) badKeyFound(h *host, err error) {
	b.noteError(err)
	if h != nil {
		h.bad.Store(b.mono() + int64(b.cfg.probeInterval))
	}
}

// keyUsable records that Redis has answered a command on h's key.
func (b *Budget) keyUsable(h *host) {
	if h != nil && h.bad.Load() != 0 {
		h.bad.Store(0)
	}
}

// unanswered decides a retry for h that Redis did not answer in time
// (err), perhaps because it is slow only for this command; the budget moves
// to the fallback only if Redis stays silent (see stuck) or the late answer
// is an error. Meanwhile the fallback pays only if Redis's last answer for
// the host granted a retry: a process that has heard nothing, as a new one
// in an outage, must not bring a budget of its own.
func (b *Budget) unanswered(req *http.Request, v classify.Verdict, h *host, err error) (budget.Millitokens, error) {
	if req.Context().Err() != nil {
		return 0, fmt.Errorf("redisbudget: %w: %w", retryhttp.ErrBudgetExhausted, req.Context().Err())
	}
	if h == nil || !h.granted.Load() {
		return 0, errSlow
	}
	return b.withdrawFallback(req, v)
}

// refundNow sends amount back to the bucket at key in a command of its own,
// for a host without state to gather refunds in. It is called from a
// command's goroutine, which no caller waits for, and waits no longer than
// the timeout. A refund that fails is lost, which errs towards fewer
// retries; a failure moves the budget to its fallback as any other does.
func (b *Budget) refundNow(key string, amount budget.Millitokens) {
	err := b.call(context.Background(), b.cfg.timeout, func(ctx context.Context) error {
		_, err := b.store.refund(ctx, key, amount)
		return err
	}, nil)
	switch {
	case err == nil:
	case errors.Is(err, errTimeout) || errors.Is(err, errBusy) || isKeyError(err):
		b.noteError(err)
	default:
		b.failOn(key, err)
	}
}

// refused records that Redis found h's bucket holding only balance: the
// host's last answer granted nothing, and retries that cost more are
// refused without a command for the hold (WithEmptyHold).
func (b *Budget) refused(h *host, balance budget.Millitokens) {
	if h == nil {
		return
	}
	h.granted.Store(false)
	if b.cfg.emptyHold > 0 {
		h.refused.Store(&refusal{balance: balance, until: b.mono() + int64(b.cfg.emptyHold)})
	}
}

// withdrawFallback decides a retry that Redis does not. What the fallback
// pays for a host the process keeps state for is owed to it: the retry's
// success goes back to the fallback, not to Redis, which did not pay for it
// (or, if Redis took the cost too late, has it back; see take).
func (b *Budget) withdrawFallback(req *http.Request, v classify.Verdict) (budget.Millitokens, error) {
	if b.cfg.failClosed {
		return 0, errFailClosed
	}
	if !b.knowsRedis(b.mono()) {
		return 0, errUnheard
	}
	took, err := b.fallback.Load().Withdraw(req, v)
	if err != nil {
		return 0, errFallback
	}
	if m := *b.table.Load(); len(m) > 0 {
		if h := m[requestKey(req)]; h != nil {
			h.owe(took, b.fbCap)
		}
	}
	return took, nil
}

// take asks the store to take cost from the bucket at key, waiting no longer
// than wait or until ctx is done. If it stops waiting and the store takes
// the cost later, the cost is refunded, since the fallback decided the
// retry: with h's refunds, or, for a host without state, at once; if the
// store refuses it later, the refusal is remembered all the same.
func (b *Budget) take(ctx context.Context, wait time.Duration, h *host, key string, cost budget.Millitokens) (bool, budget.Millitokens, error) {
	var ok bool
	var balance budget.Millitokens
	err := b.call(ctx, wait, func(ctx context.Context) error {
		var err error
		ok, balance, err = b.store.take(ctx, key, cost)
		return err
	}, func(err error) {
		switch {
		case isKeyError(err):
			b.badKeyFound(h, err)
		case err != nil:
		case ok && h == nil:
			b.refundNow(key, cost)
		case ok:
			h.addPending(cost, b.capacity)
		case h == nil:
		default:
			b.refused(h, balance)
		}
	})
	if err != nil {
		// ok and balance may still be written by a late answer.
		return false, 0, err
	}
	return ok, balance, nil
}
