package budget

import (
	"hash/maphash"
	"iter"
	"math"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"

	"github.com/retryhttp/retryhttp/classify"
	"github.com/retryhttp/retryhttp/internal/lru"
	"github.com/retryhttp/retryhttp/internal/wire"
)

// A PerHost is a retry budget with one Bucket per destination, so that a
// failing dependency spends its own budget and not that of the healthy ones.
// It is the budget a Transport uses by default. A destination is a request
// URL's scheme and host (req.URL.Host, or req.Host when that is empty),
// compared case-insensitively and with the scheme's default port removed, so
// that https://A.example:443 and https://a.example share a bucket while
// http://a.example does not. Every bucket has the configuration given to
// NewPerHost; see Bucket for the costs and refunds.
//
// A host without a bucket is treated as one whose bucket is full, which
// makes no difference to its requests: only a retry creates a bucket, and
// successes alone never cost memory.
//
// The number of buckets is bounded by MaxHosts (1024 by default), so
// that a stream of distinct hosts cannot grow the budget without limit. When
// a host needs a bucket and the table is full, the host least recently used
// (by a retry or a deposit) is forgotten to make room: a host in use keeps
// its bucket however many others come and go, as a healthy host called
// among a stream of dead ones (webhooks to customers' endpoints, a crawler)
// must. What a forgotten host owed (its bucket's capacity less its balance)
// is not forgiven at once: it is kept in a table of debts of fixed size
// (eight slots per bucket, 8 bytes each, made when a host is first
// forgotten), and a host that gets a bucket again starts with its debt,
// which its successes then refund as they refund any bucket. When the table
// of debts has no room, a new debt takes the place of the smallest among
// those it could take (a group of eight chosen by a hash of the host),
// which is forgiven. A host never finds another's debt.
//
// So a host that is down, called again after MaxHosts others, finds
// its debt again, and forgetting it does not give it more retries than a
// table without a bound would, as long as its debt is not the smallest of
// its group when another comes. Each failed request adds the cost of its
// retries to a host's debt (10 tokens for two retries of a 503, 20 for two
// after timeouts), and the debts of hosts that failed once stay until
// others take their place. A dead host called only once between many other
// failing hosts that owe at least as much as its requests add can lose its
// debt while it is small, and then each of its requests gets the retries a
// new host's get (WithMaxAttempts - 1), without a bound. With
// MaxHosts(16), and again with 128, a dead host answering 503 to
// every attempt, called 120 times, each time after N new hosts that owe 20
// tokens each, got the 100 retries its bucket pays for in 32 runs of 32 for
// N up to 3 x MaxHosts, in 26 or 27 at 4 x and 17 to 20 at 6 x; with
// 16, in 5 at 8 x, 1 at 12 x and none at 16 x. In the others it lost its
// debt at its first requests and got 240, 2 a request. A dead host whose
// debt has outgrown the others' keeps it however many come. No table of
// fixed size does better for a host called so seldom without charging
// hosts for debts that may not be theirs: it cannot tell such a host from
// one never seen, and charging every host that might be it leaves, under
// enough churn, every host's first failure an empty bucket.
//
// Finding the host least recently used visits every bucket, as adding a
// host copies the table anyway; that is one pass over at most
// MaxHosts entries per host added, paid only by a retry to a host
// without a bucket.
//
// A PerHost must be created with NewPerHost. It is safe for concurrent
// use by multiple goroutines. Deposit, and Withdraw for a host that already
// has a bucket, are lock-free and do not allocate unless the host name has
// upper-case letters. Pass the same PerHost to several Transports (with
// WithBudget) to give them a single budget per host.
type PerHost struct {
	limits
	maxHosts int
	table    atomic.Pointer[map[wire.HostKey]*Bucket] // never modified once stored
	clock    lru.Clock
	// debts holds what forgotten hosts owe; nil until a host is forgotten.
	debts atomic.Pointer[debtTable]

	mu sync.Mutex // serialises changes to table and debts
}

// NewPerHost returns a PerHost configured by opts, in which every host
// starts with a full bucket. It panics if an option's value is invalid.
func NewPerHost(opts ...Option) *PerHost {
	l, maxHosts := newLimits(opts)
	h := &PerHost{limits: l, maxHosts: maxHosts}
	h.table.Store(&map[wire.HostKey]*Bucket{})
	return h
}

// Key returns the destination a PerHost keys req's bucket by:
// the URL's scheme and host (req.Host when the URL has none), in lower case,
// with the scheme's default port removed. Budgets of other kinds use it to
// compare hosts as PerHost does. It allocates only when the scheme or
// host has upper-case letters.
func Key(req *http.Request) (scheme, host string) {
	k := wire.RequestKey(req)
	return k.Scheme, k.Host
}

// lookup returns the bucket of k, or nil if it has none.
func (h *PerHost) lookup(k wire.HostKey) *Bucket {
	return (*h.table.Load())[k]
}

// Withdraw takes the cost of a retry after verdict v from the bucket of
// req's host, creating the bucket if needed, and returns it, or returns
// retryhttp.ErrBudgetExhausted if the balance is less than the cost. A cost of 0
// always succeeds and creates no bucket.
func (h *PerHost) Withdraw(req *http.Request, v classify.Verdict) (Millitokens, error) {
	cost := h.cost(v)
	if cost == 0 {
		return 0, nil
	}
	k := wire.RequestKey(req)
	if b := h.lookup(k); b != nil {
		b.used.Touch(&h.clock)
		switch ok, live := b.take(cost); {
		case ok:
			return cost, nil
		case live:
			return 0, wire.ErrBudgetExhausted
		}
		// Evicted since the lookup: look again under the lock.
	}
	return h.withdrawSlow(k, cost)
}

func bucketUse(b *Bucket) *lru.Use { return &b.used }

// withdrawSlow is Withdraw for a host without a bucket in use: it gives the
// host a bucket, holding the capacity less any debt the host left when it
// was forgotten, in the place of the host least recently used if the table
// is full.
func (h *PerHost) withdrawSlow(k wire.HostKey, cost Millitokens) (Millitokens, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	// Evictions happen under mu, so the bucket found here stays in use
	// until it is unlocked.
	m := *h.table.Load()
	b := m[k]
	if b == nil {
		balance := h.capacity
		if d := h.debts.Load(); d != nil {
			balance -= min(d.recall(k), h.capacity)
		}
		b = newBucket(h.limits, balance)
		next, goneKey, gone, evicted := lru.Insert(m, k, b, h.maxHosts, &h.clock, bucketUse)
		if evicted {
			h.forget(goneKey, gone)
		}
		h.table.Store(&next)
	}
	if ok, _ := b.take(cost); !ok {
		return 0, wire.ErrBudgetExhausted
	}
	return cost, nil
}

// forget evicts b, the bucket of k just left out of the table, keeping
// what k owes in the table of debts. h.mu must be held.
func (h *PerHost) forget(k wire.HostKey, b *Bucket) {
	var owed Millitokens
	for {
		cur := b.balance.Load()
		if b.balance.CompareAndSwap(cur, evicted) {
			owed = h.capacity - Millitokens(cur)
			break
		}
	}
	if owed <= 0 {
		return // a full bucket is indistinguishable from a new one
	}
	d := h.debts.Load()
	if d == nil {
		d = newDebtTable(h.maxHosts)
		h.debts.Store(d)
	}
	d.add(k, owed)
}

// Deposit puts back spent, the cost of a retry of req that succeeded, or the
// refund if spent is 0 (a first attempt succeeded), into the bucket of req's
// host, without exceeding the capacity. A host without a bucket has a full
// one, or a debt its next bucket will hold and its successes then refund:
// for it Deposit does nothing. On a full bucket Deposit only reads the
// balance.
func (h *PerHost) Deposit(req *http.Request, spent Millitokens) {
	amount := h.credit(spent)
	if amount <= 0 {
		return
	}
	m := *h.table.Load()
	if len(m) == 0 {
		// No host has a bucket: the steady state of healthy traffic, which
		// then costs no key at all.
		return
	}
	k := wire.RequestKey(req)
	b := m[k]
	if b == nil {
		return
	}
	b.used.Touch(&h.clock)
	if b.put(amount) {
		return
	}
	// Evicted since the lookup; the host may have a new bucket by now.
	// Evictions happen under mu: a bucket found under it stays.
	h.mu.Lock()
	defer h.mu.Unlock()
	if b = h.lookup(k); b != nil {
		b.put(amount)
	}
}

// Balance returns the balance the next request to u would see: that of its
// host's bucket, or, if the host has none, the capacity less what the host
// owed when it was forgotten.
func (h *PerHost) Balance(u *url.URL) Millitokens {
	k := wire.MakeKey(u.Scheme, u.Host)
	if b := h.lookup(k); b != nil {
		if n := b.balance.Load(); n != evicted {
			return Millitokens(n)
		}
	}
	if d := h.debts.Load(); d != nil {
		return h.capacity - min(d.owed(k), h.capacity)
	}
	return h.capacity
}

// A HostBalance is the balance of one destination's bucket in a PerHost.
type HostBalance struct {
	// Scheme is the destination's scheme, in lower case.
	Scheme string
	// Host is the destination's host in lower case, with its port unless
	// that is the scheme's default.
	Host string
	// Balance is the bucket's balance when it was read.
	Balance Millitokens
}

// Balances returns an iterator over the hosts that have a bucket of their
// own, at most MaxHosts, with their balances, in no particular order,
// for a gauge of the budget. It iterates over a snapshot of the table of
// buckets, reading each balance as it goes, and takes no lock: it never
// delays the requests. Hosts without a bucket, and the debts of forgotten
// hosts, are not included.
func (h *PerHost) Balances() iter.Seq[HostBalance] {
	return func(yield func(HostBalance) bool) {
		for k, b := range *h.table.Load() {
			n := b.balance.Load()
			if n == evicted {
				continue
			}
			if !yield(HostBalance{Scheme: k.Scheme, Host: k.Host, Balance: Millitokens(n)}) {
				return
			}
		}
	}
}

// Hosts returns the number of per-host buckets.
func (h *PerHost) Hosts() int {
	return len(*h.table.Load())
}

// A debtTable keeps what forgotten hosts owed, in groups of debtWays
// slots. A hash of a host chooses its group and gives it a fingerprint, so
// that a host never finds another's debt. A new debt takes an empty slot of
// its group, or else the place of the smallest debt there, which is
// forgiven: the hosts that are down, whose debts are large, are remembered
// ahead of those that failed once. The slots are changed under
// PerHost.mu, and read without it.
type debtTable struct {
	seed  maphash.Seed
	slots []atomic.Uint64 // a fingerprint (high 32 bits, never 0) and a debt in Millitokens (low 32)
}

// debtWays is the number of slots in a group of a debtTable, and
// debtSlotsPerHost the slots per bucket of the PerHost: groups then
// hold a debt per host forgotten most of the time even when four times as
// many hosts as the table holds are forgotten at once.
const (
	debtWays         = 8
	debtSlotsPerHost = 8
)

func newDebtTable(maxHosts int) *debtTable {
	return &debtTable{seed: maphash.MakeSeed(), slots: make([]atomic.Uint64, maxHosts*debtSlotsPerHost)}
}

// group returns k's fingerprint and its group of slots.
func (d *debtTable) group(k wire.HostKey) (fp uint32, g []atomic.Uint64) {
	h := maphash.String(d.seed, k.Host) ^ maphash.String(d.seed, k.Scheme)*0x9e3779b97f4a7c15
	i := int(h%uint64(len(d.slots)/debtWays)) * debtWays
	return uint32(h>>32) | 1, d.slots[i : i+debtWays]
}

// add keeps what k owed.
func (d *debtTable) add(k wire.HostKey, owed Millitokens) {
	fp, g := d.group(k)
	e := uint64(fp)<<32 | uint64(min(owed, math.MaxUint32))
	least := -1
	for i := range g {
		v := g[i].Load()
		if v == 0 || uint32(v>>32) == fp {
			g[i].Store(e)
			return
		}
		if least < 0 || uint32(v) < uint32(g[least].Load()) {
			least = i
		}
	}
	g[least].Store(e)
}

// slot returns the slot holding k's debt, or nil.
func (d *debtTable) slot(k wire.HostKey) *atomic.Uint64 {
	fp, g := d.group(k)
	for i := range g {
		if uint32(g[i].Load()>>32) == fp {
			return &g[i]
		}
	}
	return nil
}

// recall takes what k owes, for k's new bucket to hold.
func (d *debtTable) recall(k wire.HostKey) Millitokens {
	if s := d.slot(k); s != nil {
		return Millitokens(uint32(s.Swap(0)))
	}
	return 0
}

// owed returns what k owes.
func (d *debtTable) owed(k wire.HostKey) Millitokens {
	if s := d.slot(k); s != nil {
		return Millitokens(uint32(s.Load()))
	}
	return 0
}
