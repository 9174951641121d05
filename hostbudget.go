package retryhttp

import (
	"iter"
	"maps"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
)

// A HostBudget is a retry budget with one Bucket per destination, so that a
// failing dependency spends its own budget and not that of the healthy ones.
// It is the budget a Transport uses by default. A destination is a request
// URL's scheme and host (req.URL.Host, or req.Host when that is empty),
// compared case-insensitively and with the scheme's default port removed, so
// that https://A.example:443 and https://a.example share a bucket while
// http://a.example does not. Every bucket has the configuration given to
// NewHostBudget; see Bucket for the costs and refunds.
//
// A host without a bucket is treated as one whose bucket is full, which
// makes no difference to its requests: only a retry creates a bucket, and
// successes alone never cost memory.
//
// The number of buckets is bounded by BucketMaxHosts (1024 by default), so
// that a stream of distinct hosts cannot grow the budget without limit. When
// a host needs a bucket and the table is full, the HostBudget first evicts
// every full bucket, which loses nothing since a full bucket is
// indistinguishable from a new one. Such a sweep visits every bucket, so it
// runs at most once per BucketMaxHosts/8 (at least 1) retries that find the
// table full. A host that still finds no room draws from a single overflow
// Bucket, configured like the others and refilled by the successes of every
// host without a bucket of its own, until a later sweep makes room for it.
//
// A HostBudget must be created with NewHostBudget. It is safe for concurrent
// use by multiple goroutines. Deposit, and Withdraw for a host that already
// has a bucket, are lock-free and do not allocate unless the host name has
// upper-case letters. Pass the same HostBudget to several Transports (with
// WithBudget) to give them a single budget per host.
type HostBudget struct {
	limits
	maxHosts int
	table    atomic.Pointer[map[hostKey]*Bucket] // never modified once stored
	overflow *Bucket

	mu         sync.Mutex // serialises changes to table
	sweepEvery int
	sweepDebt  int // retries that must find the table full before the next sweep; guarded by mu
}

// NewHostBudget returns a HostBudget configured by opts, in which every host
// starts with a full bucket. It panics if an option's value is invalid.
func NewHostBudget(opts ...BucketOption) *HostBudget {
	l, maxHosts := newLimits(opts)
	h := &HostBudget{
		limits:     l,
		maxHosts:   maxHosts,
		overflow:   newBucket(l, l.capacity),
		sweepEvery: max(1, maxHosts/8),
	}
	h.table.Store(&map[hostKey]*Bucket{})
	return h
}

// hostKey identifies a destination: a lower-case scheme, and a lower-case
// host with the scheme's default port removed.
type hostKey struct {
	scheme, host string
}

func requestKey(req *http.Request) hostKey {
	scheme, host := Destination(req)
	return hostKey{scheme, host}
}

// Destination returns the destination a HostBudget keys req's bucket by:
// the URL's scheme and host (req.Host when the URL has none), in lower case,
// with the scheme's default port removed. Budgets of other kinds use it to
// compare hosts as HostBudget does. It allocates only when the scheme or
// host has upper-case letters.
func Destination(req *http.Request) (scheme, host string) {
	if req.URL != nil {
		scheme, host = req.URL.Scheme, req.URL.Host
	}
	if host == "" {
		host = req.Host
	}
	k := makeKey(scheme, host)
	return k.scheme, k.host
}

func makeKey(scheme, host string) hostKey {
	scheme, host = lowerASCII(scheme), lowerASCII(host)
	switch {
	case scheme == "http":
		host = strings.TrimSuffix(host, ":80")
	case scheme == "https":
		host = strings.TrimSuffix(host, ":443")
	}
	return hostKey{scheme, host}
}

// lowerASCII returns s with ASCII letters in lower case, as host names
// compare. It allocates only if s has an upper-case letter.
func lowerASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; 'A' <= c && c <= 'Z' {
			return strings.ToLower(s)
		}
	}
	return s
}

// lookup returns the bucket of k, or nil if it has none.
func (h *HostBudget) lookup(k hostKey) *Bucket {
	return (*h.table.Load())[k]
}

// Withdraw takes the cost of a retry after verdict v from the bucket of
// req's host, creating the bucket if needed, and returns it, or returns
// ErrBudgetExhausted if the balance is less than the cost. A cost of 0
// always succeeds and creates no bucket.
func (h *HostBudget) Withdraw(req *http.Request, v Verdict) (Tokens, error) {
	cost := h.cost(v)
	if cost == 0 {
		return 0, nil
	}
	k := requestKey(req)
	if b := h.lookup(k); b != nil {
		switch ok, live := b.take(cost); {
		case ok:
			return cost, nil
		case live:
			return 0, ErrBudgetExhausted
		}
		// Evicted since the lookup: look again under the lock.
	}
	return h.withdrawSlow(k, cost)
}

// withdrawSlow is Withdraw for a host without a bucket in use.
func (h *HostBudget) withdrawSlow(k hostKey, cost Tokens) (Tokens, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	// Evictions happen under mu, so the bucket found here stays in use
	// until it is unlocked.
	m := *h.table.Load()
	b := m[k]
	if b == nil {
		var next map[hostKey]*Bucket
		if len(m) >= h.maxHosts {
			next = h.sweep(m)
		} else {
			next = maps.Clone(m)
		}
		if next == nil {
			b = h.overflow
		} else {
			// A new bucket is full, and cost is at most its capacity.
			next[k] = newBucket(h.limits, h.capacity-cost)
			h.table.Store(&next)
			return cost, nil
		}
	}
	if ok, _ := b.take(cost); !ok {
		return 0, ErrBudgetExhausted
	}
	return cost, nil
}

// sweep evicts the full buckets of m, the table, which is full, unless a
// sweep ran too recently. It returns a copy of m without them, or nil if it
// evicted nothing. h.mu must be held.
func (h *HostBudget) sweep(m map[hostKey]*Bucket) map[hostKey]*Bucket {
	if h.sweepDebt > 0 {
		h.sweepDebt--
		return nil
	}
	h.sweepDebt = h.sweepEvery - 1
	n := 0
	for _, b := range m {
		if b.balance.CompareAndSwap(int64(h.capacity), evicted) {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	// A new map rather than a clone with the evicted buckets deleted, so
	// that later clones copy only the buckets left.
	next := make(map[hostKey]*Bucket, len(m)-n+1)
	for k, b := range m {
		if b.balance.Load() != evicted { // evicted just now: only sweeps evict
			next[k] = b
		}
	}
	return next
}

// Deposit puts back spent, the cost of a retry of req that succeeded, or the
// refund if spent is 0 (a first attempt succeeded), into the bucket of req's
// host, without exceeding the capacity. A host without a bucket of its own
// refills the overflow bucket, which is full unless the table of buckets has
// been full. On a full bucket Deposit only reads the balance.
func (h *HostBudget) Deposit(req *http.Request, spent Tokens) {
	amount := h.credit(spent)
	if amount <= 0 {
		return
	}
	m := *h.table.Load()
	if len(m) == 0 {
		// No host has a bucket: the steady state of healthy traffic, which
		// then costs no key at all.
		h.overflow.put(amount)
		return
	}
	k := requestKey(req)
	b := m[k]
	if b == nil {
		h.overflow.put(amount)
		return
	}
	if b.put(amount) {
		return
	}
	// Evicted since the lookup; the host may have a new bucket by now.
	h.mu.Lock()
	defer h.mu.Unlock()
	if b = h.lookup(k); b == nil {
		b = h.overflow
	}
	b.put(amount)
}

// Balance returns the balance the next request to u would see: that of its
// host's bucket, or the capacity if the host has none.
func (h *HostBudget) Balance(u *url.URL) Tokens {
	if b := h.lookup(makeKey(u.Scheme, u.Host)); b != nil {
		if n := b.balance.Load(); n != evicted {
			return Tokens(n)
		}
	}
	return h.capacity
}

// A HostBalance is the balance of one destination's bucket in a HostBudget.
type HostBalance struct {
	// Scheme is the destination's scheme, in lower case.
	Scheme string
	// Host is the destination's host in lower case, with its port unless
	// that is the scheme's default.
	Host string
	// Balance is the bucket's balance when it was read.
	Balance Tokens
}

// Balances returns an iterator over the hosts that have a bucket of their
// own, at most BucketMaxHosts, with their balances, in no particular order,
// for a gauge of the budget. It iterates over a snapshot of the table of
// buckets, reading each balance as it goes, and takes no lock: it never
// delays the requests. Hosts without a bucket, whose balance is the
// capacity, and the overflow bucket are not included.
func (h *HostBudget) Balances() iter.Seq[HostBalance] {
	return func(yield func(HostBalance) bool) {
		for k, b := range *h.table.Load() {
			n := b.balance.Load()
			if n == evicted {
				continue
			}
			if !yield(HostBalance{Scheme: k.scheme, Host: k.host, Balance: Tokens(n)}) {
				return
			}
		}
	}
}

// Hosts returns the number of per-host buckets, not counting the overflow
// bucket.
func (h *HostBudget) Hosts() int {
	return len(*h.table.Load())
}
