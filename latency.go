package retryhttp

import (
	"math/bits"
	"sync"
	"sync/atomic"
	"time"
)

// Latency buckets: below 1 µs, then four per doubling from 1 µs to about
// 2^25 µs (33 s); a latency past the last bucket counts in it. A bucket's
// bounds are within 25% of each other, which is the quantile's precision.
const (
	latencyBucketsPerDoubling = 4
	latencyBuckets            = 25*latencyBucketsPerDoubling + 1
	latencyUnit               = 250 * time.Nanosecond // a quarter of the first doubling
)

// latencyBucket returns the bucket of d.
func latencyBucket(d time.Duration) int {
	u := uint64(max(d, 0) / latencyUnit)
	if u < 4 {
		return 0
	}
	e := bits.Len64(u) - 1 // u is in [2^e, 2^(e+1)), e >= 2
	sub := int(u>>(e-2)) & 3
	return min((e-2)*latencyBucketsPerDoubling+sub+1, latencyBuckets-1)
}

// latencyUpper returns the upper bound of bucket i: every latency in it,
// but in the last, is below it.
func latencyUpper(i int) time.Duration {
	if i <= 0 {
		return 4 * latencyUnit
	}
	e, sub := (i-1)/latencyBucketsPerDoubling, (i-1)%latencyBucketsPerDoubling
	return time.Duration(uint64(4+sub+1)<<e) * latencyUnit
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

// A hostLatency tracks the time to response headers of requests to one
// host, in two windows of a fixed number of samples, the current one and
// the one before, so that the quantile follows changes within two windows
// and is never computed from fewer samples than a window holds once the
// first one is full. It also counts the host's requests and hedges over the
// same windows, for the cap on hedges. Recording is lock-free; the windows
// turn under a lock, once per window.
type hostLatency struct {
	win  [2]latencyWindow
	cur  atomic.Uint32 // index of the current window
	full atomic.Bool   // a window has been completed: the previous one counts

	requests [2]atomic.Uint32
	hedges   [2]atomic.Uint32

	delay atomic.Int64 // the cached quantile, in ns; 0 while too few samples
	mu    sync.Mutex   // turns the windows
}

// record adds one latency sample, turning the windows when the current one
// holds size samples, and recomputing the cached quantile every 64 samples.
func (h *hostLatency) record(d time.Duration, size uint32, q float64, minSamples int) {
	c := h.cur.Load()
	w := &h.win[c]
	w.counts[latencyBucket(d)].Add(1)
	n := w.n.Add(1)
	if n >= size {
		h.turn(c)
	}
	if n%64 == 0 || (!h.full.Load() && int(n) == minSamples) {
		h.delay.Store(int64(h.quantile(q, minSamples)))
	}
}

// turn makes the previous window the current one, emptied, if c is still
// the current one.
func (h *hostLatency) turn(c uint32) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cur.Load() != c {
		return
	}
	next := 1 - c
	h.win[next].reset()
	h.requests[next].Store(0)
	h.hedges[next].Store(0)
	h.cur.Store(next)
	h.full.Store(true)
}

// quantile returns the q-quantile of the samples in both windows, as the
// upper bound of its bucket, or 0 when there are fewer than minSamples. The
// upper bound, not a point inside the bucket, so that a host whose latency
// hardly varies is not hedged on every request.
func (h *hostLatency) quantile(q float64, minSamples int) time.Duration {
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
		seen += uint64(c)
		if seen > rank {
			return latencyUpper(i)
		}
	}
	return latencyUpper(latencyBuckets - 1)
}

// count counts a request that may be hedged.
func (h *hostLatency) count() { h.requests[h.cur.Load()].Add(1) }

// hedgeBurst is how many hedges beyond the fraction a host may send, so
// that slow requests that come together are not refused while the window's
// count catches up, and a new host can hedge its first slow requests.
const hedgeBurst = 10

// mayHedge reports whether one more hedge stays within fraction of the
// host's requests over the two windows, plus hedgeBurst; if so it counts
// the hedge.
func (h *hostLatency) mayHedge(fraction float64) bool {
	// Count the hedge first, then check, so that concurrent requests see
	// each other's hedges and cannot all pass the cap at once.
	c := h.cur.Load()
	h.hedges[c].Add(1)
	reqs := h.requests[0].Load() + h.requests[1].Load()
	hedges := h.hedges[0].Load() + h.hedges[1].Load()
	if float64(hedges) > fraction*float64(reqs)+hedgeBurst {
		h.hedges[c].Add(^uint32(0)) // take it back
		return false
	}
	return true
}

// A latencyTable keeps a hostLatency per destination, at most max of them:
// a host past that gets none, and is not hedged on a quantile.
type latencyTable struct {
	max   int
	hosts atomic.Pointer[map[hostKey]*hostLatency] // never modified once stored
	mu    sync.Mutex
}

func newLatencyTable(max int) *latencyTable {
	t := &latencyTable{max: max}
	t.hosts.Store(&map[hostKey]*hostLatency{})
	return t
}

// host returns k's tracker, making it if there is room; nil if there is
// none.
func (t *latencyTable) host(k hostKey) *hostLatency {
	if h := (*t.hosts.Load())[k]; h != nil {
		return h
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	m := *t.hosts.Load()
	if h := m[k]; h != nil {
		return h
	}
	if len(m) >= t.max {
		return nil
	}
	next := make(map[hostKey]*hostLatency, len(m)+1)
	for hk, h := range m {
		next[hk] = h
	}
	h := &hostLatency{}
	next[k] = h
	t.hosts.Store(&next)
	return h
}
