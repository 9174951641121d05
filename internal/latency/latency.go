// Package latency keeps, per host, the recent times to response headers
// and what is built on them: their quantiles (the hedge delay, the typical
// answer a deadline must leave room for), the host's hedge credit, the
// pause that stops hedges when a host answers nobody, and the queue of
// calls waiting for their first hedge. Given latencies as they are
// measured (Record) and requests as they come (Count), it answers with a
// delay, a credit or a verdict; every table is bounded, forgetting the
// host least recently used. It never sends, never sleeps (the queue's one
// timer per host starts a waiting call's hedge on a goroutine of its own)
// and never logs.
package latency

import (
	"math/bits"
	"sync"
	"sync/atomic"
	"time"

	"github.com/retryhttp/retryhttp/internal/lru"
	"github.com/retryhttp/retryhttp/internal/wire"
)

// Latency buckets: below 1 µs, then eight per doubling from 1 µs to about
// 2^25 µs (33 s); a latency past the last bucket counts in it. A bucket's
// upper bound is at most 12.5% above its lower one, which is the quantile's
// precision.
const (
	latencyShift              = 3 // log2 of the buckets per doubling
	latencyBucketsPerDoubling = 1 << latencyShift
	latencyBuckets            = 25*latencyBucketsPerDoubling + 1
	latencyUnit               = time.Microsecond / latencyBucketsPerDoubling
)

// clockOrigin is the instant monotonic measures from: time.Since reads only
// the monotonic clock, where time.Now reads the wall clock too, at about
// twice the cost.
var clockOrigin = time.Now()

// Monotonic returns the time since clockOrigin.
func Monotonic() time.Duration { return time.Since(clockOrigin) }

// latencyBucket returns the bucket of d.
func latencyBucket(d time.Duration) int {
	u := uint64(max(d, 0) / latencyUnit)
	if u < latencyBucketsPerDoubling {
		return 0
	}
	e := bits.Len64(u) - 1 // u is in [2^e, 2^(e+1)), e >= latencyShift
	sub := int(u>>(e-latencyShift)) & (latencyBucketsPerDoubling - 1)
	return min((e-latencyShift)*latencyBucketsPerDoubling+sub+1, latencyBuckets-1)
}

// latencyUpper returns the upper bound of bucket i: every latency in it,
// but in the last, is below it.
func latencyUpper(i int) time.Duration {
	if i <= 0 {
		return latencyBucketsPerDoubling * latencyUnit
	}
	e, sub := (i-1)/latencyBucketsPerDoubling, (i-1)%latencyBucketsPerDoubling
	return time.Duration(uint64(latencyBucketsPerDoubling+sub+1)<<e) * latencyUnit
}

// A latencyWindow counts the latencies of one window.
type latencyWindow struct {
	counts [latencyBuckets]atomic.Uint32
	n      atomic.Uint32
}

func (w *latencyWindow) reset() {
	for i := range w.counts {
		w.counts[i].Store(0)
	}
	w.n.Store(0)
}

// A Host tracks the time to response headers of requests to one
// host, in two windows of a fixed number of samples, the current one and
// the one before, so that the quantile follows changes within two windows
// and is never computed from fewer samples than a window holds once the
// first one is full. It also holds the host's hedge credit, for the cap on
// hedges. Recording is lock-free; the windows turn under a lock, once per
// window.
type Host struct {
	win  [2]latencyWindow
	cur  atomic.Uint32 // index of the current window
	full atomic.Bool   // a window has been completed: the previous one counts

	credit atomic.Int64 // hedges the host may send, in HedgeUnit

	answered  atomic.Int64 // when a request last had its answer, monotonic
	lateMu    sync.Mutex
	lates     [PauseBurst]time.Duration // when requests last passed their delay, a ring
	lateNext  int                       // the oldest in lates
	lateCount int

	delay atomic.Int64 // the cached quantile, in ns; 0 while too few samples
	mu    sync.Mutex   // turns the windows

	hedges Queue // the calls waiting for their first hedge

	// apart counts the host's next hedged requests whose first attempt
	// is sent from a goroutine of its own (SendApart).
	apart atomic.Int32

	used lru.Use // by the Table
}

// SendApart reports whether a hedged request's first attempt is sent from
// a goroutine of its own, so that a hedge that wins can leave it to answer
// rather than cancel it: while the host's requests that KeepApart counted
// are not all sent.
func (h *Host) SendApart() bool {
	if h.apart.Load() <= 0 {
		return false
	}
	h.apart.Add(-1)
	return true
}

// KeepApart has the host's next n hedged requests send their first
// attempt apart (SendApart).
func (h *Host) KeepApart(n int32) { h.apart.Store(n) }

// Record adds the latency of a request sent at start and answered at end
// (monotonic times), turning the windows when the current one holds size
// samples, and recomputing the cached quantile every 64 samples.
func (h *Host) Record(start, end time.Duration, size uint32, q float64, minSamples int) {
	h.answered.Store(int64(end))
	n := h.Add(end-start, size)
	if n%64 == 0 || (!h.full.Load() && int(n) == minSamples) {
		h.delay.Store(int64(h.Quantile(q, minSamples)))
	}
}

// Add counts the latency d in the current window, turning the windows
// when it holds size samples, and returns how many that window held.
func (h *Host) Add(d time.Duration, size uint32) uint32 {
	c := h.cur.Load()
	w := &h.win[c]
	w.counts[latencyBucket(d)].Add(1)
	n := w.n.Add(1)
	if n >= size {
		h.turn(c)
	}
	return n
}

// turn makes the previous window the current one, emptied, if c is still
// the current one.
func (h *Host) turn(c uint32) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cur.Load() != c {
		return
	}
	next := 1 - c
	h.win[next].reset()
	h.cur.Store(next)
	h.full.Store(true)
}

// Quantile returns the q-quantile of the samples in both windows,
// interpolated within its bucket, or 0 when there are fewer than
// minSamples. Even for a host whose latency hardly varies, so that its
// samples share a bucket, about 1-q of the samples lie above it.
func (h *Host) Quantile(q float64, minSamples int) time.Duration {
	var counts [latencyBuckets]uint32
	var total uint64
	for w := range h.win {
		if !h.full.Load() && uint32(w) != h.cur.Load() {
			continue
		}
		for i := range counts {
			c := h.win[w].counts[i].Load()
			counts[i] += c
			total += uint64(c)
		}
	}
	if total == 0 || total < uint64(minSamples) {
		return 0
	}
	rank := uint64(q * float64(total))
	var seen uint64
	for i, c := range counts {
		if seen+uint64(c) > rank {
			// Interpolate, taking the bucket's samples as spread evenly.
			lower := time.Duration(0)
			if i > 0 {
				lower = latencyUpper(i - 1)
			}
			within := (float64(rank-seen) + 0.5) / float64(c)
			return lower + time.Duration(within*float64(latencyUpper(i)-lower))
		}
		seen += uint64(c)
	}
	return latencyUpper(latencyBuckets - 1)
}

// The cap on hedges is a token bucket of hedge credit per host: each
// request that may be hedged earns the host a fraction of a hedge, each
// hedge spends one, and at most HedgeBurst are saved. Over any run of
// requests, a host's hedges are then at most the fraction of them plus
// HedgeBurst, whatever the host did before: a quiet spell saves no hedges
// for the moment it turns slow.
const (
	HedgeUnit = 1 << 20 // one hedge, in credit
	// HedgeBurst is how many hedges a host may save, so that slow requests
	// that come together are not refused, and a new host can hedge its
	// first slow requests.
	HedgeBurst = 10
)

// Delay returns the cached quantile Record keeps, 0 while the host has too
// few samples.
func (h *Host) Delay() time.Duration { return time.Duration(h.delay.Load()) }

// Hedges returns the host's queue of calls waiting for their first hedge.
func (h *Host) Hedges() *Queue { return &h.hedges }

// HedgeEarning returns the credit a request earns under fraction.
func HedgeEarning(fraction float64) int64 { return max(int64(fraction*HedgeUnit), 1) }

// newHostLatency returns a tracker whose hedge credit is full.
func newHost() *Host {
	h := &Host{}
	h.credit.Store(HedgeBurst * HedgeUnit)
	return h
}

// Count earns the host credit for a request that may be hedged. When the
// credit is full it only reads it, so that a host that needs no hedges
// costs its requests no contended write.
func (h *Host) Count(earning int64) {
	if h.credit.Load() < HedgeBurst*HedgeUnit {
		h.credit.Add(earning) // concurrent adds may pass the burst by a little
	}
}

// MayHedge spends a hedge's credit, if the host has it.
func (h *Host) MayHedge() bool {
	for {
		c := h.credit.Load()
		if c < HedgeUnit {
			return false
		}
		if h.credit.CompareAndSwap(c, c-HedgeUnit) {
			return true
		}
	}
}

// PauseBurst is how many requests may pass their hedge delay within one
// delay while the host answers nothing at all before the host counts as
// paused. When every request in flight passes the delay at once, the client
// or the server has paused for everyone: hedges would add load and spend
// the host's saved hedges, which slow requests after the pause then lack.
const PauseBurst = 3

// Late notes that a request passed its hedge delay at now, and reports
// whether the host has paused: it has answered nothing for longer than
// delay, and PauseBurst requests passed their delay within it before this
// one. Noting and judging under one lock, concurrent late requests see
// each other.
func (h *Host) Late(now, delay time.Duration) (paused bool) {
	h.lateMu.Lock()
	defer h.lateMu.Unlock()
	paused = h.lateCount >= PauseBurst && now-h.lates[h.lateNext] <= delay
	h.lates[h.lateNext] = now
	h.lateNext = (h.lateNext + 1) % PauseBurst
	h.lateCount++
	if a := h.answered.Load(); a != 0 && now-time.Duration(a) <= delay {
		return false // 0: never answered
	}
	return paused
}

// Scarce reports whether the host has fewer than half of HedgeBurst
// hedges left.
func (h *Host) Scarce() bool { return h.credit.Load() < HedgeBurst*HedgeUnit/2 }

// SetCredit sets the host's hedge credit to hedges, in HedgeUnit: for a
// test that puts a host in a given state.
func (h *Host) SetCredit(hedges int64) { h.credit.Store(hedges) }

// Unhedge gives back the credit of a hedge that was not sent.
func (h *Host) Unhedge() { h.credit.Add(HedgeUnit) }

// A Table keeps a Host per destination, at most max of them:
// a new host takes the place of the one least recently used, whose
// latencies and hedge credit are forgotten. A host forgotten and met again
// starts as a new one: it is hedged after a fixed delay at once, and on its
// quantile once it has enough samples again, with a fresh hedge credit of
// HedgeBurst, which is all a new host would have.
type Table struct {
	max   int
	hosts atomic.Pointer[map[wire.HostKey]*Host] // never modified once stored
	clock lru.Clock
	mu    sync.Mutex
}

func NewTable(max int) *Table {
	t := &Table{max: max}
	t.hosts.Store(&map[wire.HostKey]*Host{})
	return t
}

func hostUse(h *Host) *lru.Use { return &h.used }

// Len returns how many hosts the table holds.
func (t *Table) Len() int { return len(*t.hosts.Load()) }

// Lookup returns k's tracker, nil if k has none.
func (t *Table) Lookup(k wire.HostKey) *Host { return (*t.hosts.Load())[k] }

// Host returns k's tracker, making it, in the place of the host least
// recently used if the table is full, if k has none.
func (t *Table) Host(k wire.HostKey) *Host {
	if h := (*t.hosts.Load())[k]; h != nil {
		h.used.Touch(&t.clock)
		return h
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	m := *t.hosts.Load()
	if h := m[k]; h != nil {
		return h
	}
	h := newHost()
	next, _, _, _ := lru.Insert(m, k, h, t.max, &t.clock, hostUse)
	t.hosts.Store(&next)
	return h
}
