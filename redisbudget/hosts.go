package redisbudget

import (
	"context"
	"maps"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/retryhttp/retryhttp/budget"
)

// hostKey identifies a destination as budget.PerHost does: a
// lower-case scheme, and a lower-case host with the scheme's default port
// removed.
type hostKey struct {
	scheme, host string
}

func requestKey(req *http.Request) hostKey {
	scheme, host := budget.Key(req)
	return hostKey{scheme, host}
}

// redisKey returns the Redis key of the bucket of k in the budget whose keys
// start with prefix. The key has no braces of its own making, so Redis
// Cluster places each bucket by its whole name.
func redisKey(prefix string, k hostKey) string {
	return prefix + k.scheme + "://" + k.host
}

// A host is what a process keeps about one destination it has retried: the
// refunds it has not yet sent, Redis's last refusal, and whether its key is
// usable.
//
// A host's key is usable until a command on it fails with a key's fault
// (a value of another type at the key): then the host's key is bad, its
// retries are paid by the fallback bucket, its successes refill that
// bucket, and one retry per probe interval asks Redis again, until Redis
// answers one for the key. The rest of the budget stays on Redis.
type host struct {
	pending atomic.Int64 // refunds not yet sent, in Tokens
	_       [56]byte     // keeps pending, which every success writes, on a cache line of its own

	key     string                  // the bucket's Redis key
	refused atomic.Pointer[refusal] // Redis's last refusal, if any
	granted atomic.Bool             // Redis's last answer to a take granted it
	taking  chan struct{}           // holds a token while a take is in flight
	bad     atomic.Int64            // while the key is bad, the instant (see Budget.mono) at which to ask Redis again; 0 while it is usable
	owed    atomic.Int64            // costs of retries the fallback paid whose successes have not come back, in Tokens
}

func newHost(key string) *host { return &host{key: key, taking: make(chan struct{}, 1)} }

// holds reports whether a refusal Redis gave for the host still holds for a
// retry that costs cost, as of the instant now (see Budget.mono).
func (h *host) holds(cost budget.Millitokens, now int64) bool {
	r := h.refused.Load()
	return r != nil && cost > r.balance && now < r.until
}

// owe records that the fallback paid amount for a retry, holding no more
// than limit, the fallback's capacity.
func (h *host) owe(amount, limit budget.Millitokens) {
	for {
		cur := h.owed.Load()
		next := min(cur+int64(amount), int64(limit))
		if next == cur || h.owed.CompareAndSwap(cur, next) {
			return
		}
	}
}

// repay reports whether the fallback is owed spent, the cost of a retry that
// succeeded, and if so takes it off what it is owed.
func (h *host) repay(spent budget.Millitokens) bool {
	for {
		cur := h.owed.Load()
		if spent <= 0 || cur < int64(spent) {
			return false
		}
		if h.owed.CompareAndSwap(cur, cur-int64(spent)) {
			return true
		}
	}
}

// badKey reports whether the host's key is bad, and if so whether Redis is
// due to be asked again as of the instant now.
func (h *host) badKey(now int64) (bad, due bool) {
	at := h.bad.Load()
	return at != 0, at != 0 && now >= at
}

// lock waits until no take is in flight for the host, and claims the right
// to send one, until deadline or until ctx is done.
func (h *host) lock(ctx context.Context, deadline time.Time) error {
	select {
	case h.taking <- struct{}{}:
		return nil
	default:
	}
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	select {
	case h.taking <- struct{}{}:
		return nil
	case <-timer.C:
		return errTimeout
	case <-ctx.Done():
		return ctx.Err()
	}
}

// unlock lets the next take for the host go.
func (h *host) unlock() { <-h.taking }

// A refusal records that Redis found a bucket holding only balance, so that
// until the given instant (see Budget.mono) a retry costing more is refused
// without asking again.
type refusal struct {
	balance budget.Millitokens
	until   int64
}

// addPending adds amount to the refunds not yet sent, holding no more than
// limit, the capacity: a larger refund fills the bucket all the same.
func (h *host) addPending(amount, limit budget.Millitokens) {
	for {
		cur := h.pending.Load()
		if cur >= int64(limit) {
			return
		}
		next := min(cur+int64(amount), int64(limit))
		if h.pending.CompareAndSwap(cur, next) {
			return
		}
	}
}

// host returns the state kept for k, making it if there is room; nil if
// there is none.
func (b *Budget) host(k hostKey) *host {
	if h := (*b.table.Load())[k]; h != nil {
		return h
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	m := *b.table.Load()
	if h := m[k]; h != nil {
		return h
	}
	var next map[hostKey]*host
	if len(m) < b.cfg.maxHosts {
		next = maps.Clone(m)
	} else {
		// Forget the hosts with nothing to send and a usable key; a
		// refusal is only a shortcut.
		next = make(map[hostKey]*host, len(m))
		for hk, h := range m {
			if h.pending.Load() > 0 || h.bad.Load() != 0 {
				next[hk] = h
			}
		}
		if len(next) >= b.cfg.maxHosts {
			return nil
		}
	}
	h := newHost(redisKey(b.prefix, k))
	next[k] = h
	b.table.Store(&next)
	return h
}

// forget drops the state of the hosts in full, whose buckets Redis has just
// reported full. Refunds that arrived since are dropped with it: they would
// go to a full bucket, unless another process has drawn on it meanwhile,
// and keeping a host whose successes never pause would cost a command per
// flush interval for ever.
func (b *Budget) forget(full []hostKey) {
	b.mu.Lock()
	defer b.mu.Unlock()
	next := maps.Clone(*b.table.Load())
	for _, k := range full {
		delete(next, k)
	}
	b.table.Store(&next)
}
