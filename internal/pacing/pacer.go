package pacing

import (
	"math"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/retryhttp/retryhttp/internal/config"
	"github.com/retryhttp/retryhttp/internal/lru"
	"github.com/retryhttp/retryhttp/internal/wire"
)

// quiet is how long a paced key goes on being paced after its last
// throttle or low quota.
const quiet = int64(30 * time.Second)

// retryAfterGrain is the Retry-After that holds a key paced at a rate
// known (learned from its throttles, or from its quota) no longer than the
// cut does: a second, the least a whole number of seconds says, which is
// what a bucket that refills many times a second answers when it is
// empty. A longer one, or any while no rate is known, holds every turn of
// the key until it ends.
const retryAfterGrain = time.Second

// A Pacer paces requests by key. It is safe for concurrent use.
type Pacer struct {
	maxKeys int
	// declared holds the quotas declared in advance, in requests a
	// second, by host; nil when none is. Never modified.
	declared map[string]float64
	// holdLimit is the longest a Retry-After holds a key's turns.
	holdLimit int64
	// sh links the Pacer to the other members of its pace.Store; nil
	// when it paces alone.
	sh    *sharing
	paced atomic.Int64 // keys paced, gone ones aside
	keys  table
	// hosts counts the keys known by their host's slot (SlotOf), so
	// that a request to a host no key is of is told so without its key.
	hosts [hostSlots]atomic.Int32
	// skips counts, by host slot, the answers of hosts no key is of that
	// are to skip the reading of their quota fields (Signals).
	skips [hostSlots]atomic.Int32
	clock lru.Clock
	mu    sync.Mutex // serialises changes to keys
}

// New returns a Pacer that remembers c.MaxHosts keys at most (1024 when
// not positive). It reads nothing else of c: the wait allowed is the
// caller's to pass to Reserve.
func New(c config.Pace) *Pacer {
	p := &Pacer{maxKeys: c.MaxHosts, holdLimit: int64(c.RetryAfterLimit)}
	if p.maxKeys <= 0 {
		p.maxKeys = config.NewPace().MaxHosts
	}
	if p.holdLimit <= 0 {
		p.holdLimit = int64(time.Minute)
	}
	if len(c.Quotas) > 0 {
		p.declared = make(map[string]float64, len(c.Quotas))
		for h, r := range c.Quotas {
			if r > 0 {
				p.declared[h] = r
			}
		}
	}
	return p
}

// A state is what a Pacer knows of a key: 968 bytes. Its times are
// nanoseconds from base, an hour before it was made.
type state struct {
	used lru.Use

	// pacedNow is paced, for Reserve to read without the lock.
	pacedNow atomic.Bool

	mu    sync.Mutex
	base  time.Time
	gone  bool // forgotten by the table
	paced bool
	// declared is the quota declared for the key's host, in requests a
	// second; 0 when none is. A key with one is paced from its first
	// request on, and for as long as it is known.
	declared float64
	// pressure is the time of the key's last throttle or low quota.
	pressure int64
	// sent measures the rate at which requests were sent, from the send
	// times of their responses.
	sent meter

	// The rate learned from throttles: see growth.go.
	cut        bool
	cutAt      int64
	wMax       float64
	flat       float64 // the plateau after the last cut, in seconds
	roundEnd   int64
	cycleStart int64 // when the request of the last cut was sent
	accepted   int   // responses not throttled to requests sent since

	// The rate a quota allows: see quotarate.go.
	quotaOK    bool
	quota      float64
	quotaUntil int64
	// quotaSince is when the key's quota last became known, its own or
	// the fleet's: the throttles of requests sent before it are the
	// quota's to explain, and cut no rate (quotaExplains).
	quotaSince int64
	policy     float64 // 0 when none is announced
	refill     float64 // a bucket's, lack/lackIn
	lack       float64 // what the bucket lacks, smoothed
	lackIn     float64 // the seconds it takes to refill it, smoothed
	refillAt   int64
	creeping   bool // refill has grown since a response that said it

	// What the key shares with a fleet: see share.go.
	asks            int64   // turns asked for since the last report
	askedAt         int64   // when the last report counted them
	demand          float64 // turns asked for a second, smoothed over the reports
	share           float64 // this member's share of the key's quota, from the last exchange
	shareAt         int64   // when the last exchange gave it; 0: never, the whole is this member's
	lastCut         int64   // when the key last throttled a request of this member's; 0 if never
	fleetCut        int64   // the latest throttle of another member's this member cut for
	fleetQuota      float64 // the quota's rate for the fleet, as its members last reported it
	fleetQuotaUntil int64

	sched schedule
	q     queue
	// epoch counts the times the key stopped being paced: a turn of an
	// epoch before is not the schedule's any more.
	epoch uint32
}

// ns returns t as nanoseconds from the state's base, at least 0 and
// saturating: every difference of two is an int64.
func (st *state) ns(t time.Time) int64 { return max(int64(t.Sub(st.base)), 0) }

// rate returns the rate the key is paced at at n: the least of the rate
// learned from throttles, the rate its quota allows and its announced
// policy; +Inf when none of them is known.
func (st *state) rate(n int64) float64 {
	// The rates of a quota are the fleet's: this member's share of them
	// is its own (share.go); alone, the whole.
	q := math.Inf(1)
	if qr, ok := st.quotaRate(n); ok {
		q = qr
	} else if st.fleetQuota > 0 && n < st.fleetQuotaUntil {
		q = st.fleetQuota
	}
	r := math.Inf(1)
	if l, ok := st.learned(n); ok && !(st.cutAt < st.quotaSince && !math.IsInf(q, 1)) {
		// A cut before the quota was known is the quota's to explain:
		// a burst sent before any answer said it.
		r = l
	}
	if st.policy > 0 {
		q = min(q, st.policy)
	}
	if st.declared > 0 {
		q = min(q, st.declared)
	}
	if !math.IsInf(q, 1) {
		r = min(r, q*st.shareOf(n))
	}
	return r
}

// expired reports whether the key, paced, is due to stop being paced at
// n: its last throttle or low quota was more than 30 s ago, and it has no
// quota declared.
func (st *state) expired(n int64) bool {
	return st.declared == 0 && n-st.pressure > quiet
}

// A pace is the rate at which a key will be paced at a turn's slot, as far
// as it is known when the turn is given, but at most twice the rate a
// second before the slot (doubling), so that the rate at most doubles a
// second however near its slots the turns are given; max itself when st
// is nil.
type pace struct {
	st  *state
	max float64
}

// doubling is the time in which a key's rate may at most double.
const doubling = int64(time.Second)

// pace returns the pace of the turns given at n.
func (st *state) pace(n int64) pace { return pace{st, 2 * st.rate(n)} }

// at returns the rate at slot.
func (p pace) at(slot int64) float64 {
	if p.st == nil {
		return p.max
	}
	return min(p.st.rate(slot), p.max, 2*p.st.rate(slot-doubling))
}

// stop forgets what the key learned: paced again, it starts afresh. A key
// with a quota declared is never stopped.
func (st *state) stop() {
	st.paced, st.pressure = false, 0
	st.pacedNow.Store(false)
	st.cut, st.cutAt, st.wMax, st.flat, st.roundEnd = false, 0, 0, 0, 0
	st.cycleStart, st.accepted = 0, 0
	st.quotaOK, st.quota, st.quotaUntil, st.quotaSince, st.policy = false, 0, 0, 0, 0
	st.refill, st.lack, st.lackIn, st.refillAt, st.creeping = 0, 0, 0, 0, false
	st.sched = schedule{}
	st.q.wakeAll()
	st.epoch++
}

// lookup returns the state of k, or nil.
func (p *Pacer) lookup(k Key) *state {
	st := p.keys.get(k)
	if st != nil {
		st.used.Touch(&p.clock)
	}
	return st
}

// add returns the state of k, making it at now, in the place of the key
// least recently used when the table is full, if k has none.
func (p *Pacer) add(k Key, now time.Time) *state {
	p.mu.Lock()
	defer p.mu.Unlock()
	if st := p.keys.get(k); st != nil {
		return st
	}
	// The base is well before any time the key is given, the send times of
	// the responses that made it and the times of turns asked for a moment
	// before, so that they count from 0 on.
	st := &state{base: now.Add(-time.Hour), declared: p.declared[k.Host.Host]}
	if st.declared > 0 {
		st.paced = true
		st.pacedNow.Store(true)
		p.paced.Add(1)
	}
	p.hosts[SlotOf(k.Host.Host)].Add(1)
	if goneKey, gone := p.keys.insert(k, st, p.maxKeys, &p.clock); gone != nil {
		p.hosts[SlotOf(goneKey.Host.Host)].Add(-1)
		gone.mu.Lock()
		gone.gone = true
		if gone.paced {
			gone.paced = false
			gone.pacedNow.Store(false)
			p.paced.Add(-1)
		}
		gone.mu.Unlock()
	}
	return st
}

// A Turn is a request's place in its key's schedule. The zero Turn is due
// at once.
type Turn struct {
	st   *state
	n    int64   // its number
	at   int64   // its slot
	rate float64 // the rate it was given at
	gen  uint32  // the schedule's generation it knows
	// w is the turn's place in the queue while it has no slot.
	w     *waiter
	epoch uint32
	nap   int64 // how long its caller sleeps before it asks again
	wake  <-chan struct{}
}

// Nap returns how long the caller should sleep before it calls Wait: the
// wait Reserve or Wait returned, or, for the head of a key's queue, until
// its slot comes within the horizon.
func (t *Turn) Nap() time.Duration { return time.Duration(t.nap) }

// Woken returns a channel closed when the caller should call Wait before
// its nap is over: its turn became the head of its key's queue, or the key
// stopped being paced. It is nil when nothing will wake the caller early.
func (t *Turn) Woken() <-chan struct{} { return t.wake }

// KnowsAny reports whether the Pacer has a state for any key: one atomic
// load.
func (p *Pacer) KnowsAny() bool { return p.keys.n.Load() > 0 }

// MayKnow reports whether the Pacer may have a state for a key of the
// host in slot s (SlotOf the host as a request's URL writes it), or paces
// it from its first request (a quota is declared): false means it has
// none. An atomic load.
func (p *Pacer) MayKnow(s Slot) bool {
	return p.declared != nil || p.hosts[s].Load() > 0
}

// Knows reports whether the Pacer has a state for k: k throttled, or
// announced a quota, and was not forgotten since. A key it does not know
// needs its responses observed only when they are throttles or announce
// a quota (Signals). One atomic load when it knows no key; a lookup else.
func (p *Pacer) Knows(k Key) bool {
	return p.keys.n.Load() > 0 && p.keys.get(k) != nil
}

// Signals reports whether a response of host (as its request's URL
// writes it) with status and header h says anything to a Pacer about a
// key it does not know: it is a throttle (a 429, or a 503 with
// Retry-After), or it announces a quota spent or nearly spent. A quota
// far from spent says nothing yet, so that a host that announces its
// quota on every answer costs no state, no lock and no clock reading
// until it nears the end of it.
//
// Nor are its quota fields read on every answer: after an answer that
// announces none, or one with room for many more requests, the host's next
// answers skip the reading, at most maxSkip of them and at most one for
// each skipRoom requests of room, so that a host far from its quota costs
// a hash and an atomic add on most answers. At worst, pacing starts
// maxSkip answers late, while more than skipRoom requests were left for
// each of them before a tenth of the quota: in time unless other clients
// spend the quota skipRoom times faster than this one.
func (p *Pacer) Signals(host string, status int, h http.Header) bool {
	if status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable && wire.HasRetryAfter(h) {
		return true
	}
	if len(h) == 0 {
		return false
	}
	skips := &p.skips[SlotOf(host)]
	if skips.Load() > 0 && skips.Add(-1) >= 0 {
		return false
	}
	low, room := lowQuota(h)
	switch {
	case low:
		skips.Store(0)
	case room == 0:
		skips.Store(maxSkip) // h announces no quota, or a spent one
	default:
		skips.Store(int32(min(room/skipRoom, maxSkip)))
	}
	return low
}

// maxSkip is how many answers of a host at most skip the reading of their
// quota fields after one is read (Signals); skipRoom how many requests of
// room each skip needs.
const (
	maxSkip  = 31
	skipRoom = 64
)

// Paces reports whether k is paced, or is to be from its first request
// (its host has a quota declared): its requests wait for their turns. One
// atomic load while no key is paced; a lookup else. Neither locks nor
// allocates.
func (p *Pacer) Paces(k Key) bool {
	if !p.Pacing() {
		return false
	}
	if st := p.keys.get(k); st != nil {
		return st.pacedNow.Load()
	}
	return p.declared[k.Host.Host] > 0
}

// Pacing reports whether any key may be paced: one atomic load, false for
// a nil Pacer; always true once a quota is declared.
func (p *Pacer) Pacing() bool { return p != nil && (p.paced.Load() != 0 || p.declared != nil) }

// Reserve gives a request to k, at now, its turn, and returns how long it
// must wait for it. When that wait would exceed limit it gives nothing and
// reports false, with the wait it would have been; the wait of a turn given
// never exceeds limit. While no key is paced, Reserve is one atomic load;
// for a key not paced, a lookup; neither locks nor allocates.
func (p *Pacer) Reserve(k Key, now time.Time, limit time.Duration) (Turn, time.Duration, bool) {
	if p.paced.Load() == 0 && p.declared == nil {
		return Turn{}, 0, true
	}
	st := p.keys.get(k)
	if st == nil && p.declared[k.Host.Host] > 0 {
		st = p.add(k, now)
	}
	if st == nil || !st.pacedNow.Load() {
		return Turn{}, 0, true
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	n := st.ns(now)
	if !st.paced || st.gone || st.expired(n) {
		return Turn{}, 0, true
	}
	st.asks++
	p.sh.tick(p)
	limitNs := int64(max(limit, 0))
	front := st.front(n)
	if st.q.head() == nil && front-n <= horizon {
		num, slot, rate, ok := st.sched.reserve(n, limitNs, st.pace(n))
		if !ok {
			return Turn{}, time.Duration(slot - n), false
		}
		return Turn{st: st, n: num, at: slot, rate: rate, gen: st.sched.gen, epoch: st.epoch, nap: slot - n}, time.Duration(slot - n), true
	}
	eta := st.eta(n, front, int64(st.q.waiting))
	if eta > limitNs {
		return Turn{}, time.Duration(eta), false
	}
	t := Turn{st: st, epoch: st.epoch}
	w, head := st.q.join()
	t.w = w
	st.queued(&t, n, front, head)
	return t, time.Duration(eta), true
}

// front returns, at n, the first slot the schedule could give.
func (st *state) front(n int64) int64 {
	return max(n, st.sched.front(n, st.pace(n)), st.sched.held)
}

// eta returns, at n, the wait of a waiter with ahead waiters before it, if
// the rate known at front holds.
func (st *state) eta(n, front, ahead int64) int64 {
	iv := interval(st.pace(n).at(front))
	if ahead > 0 && iv > 0 && ahead > (math.MaxInt64-(front-n))/iv {
		return math.MaxInt64
	}
	return front - n + ahead*iv
}

// queued sets the nap of t, a turn in the queue, and what wakes it: the
// head sleeps until the front of the schedule is within the horizon, and
// another waiter until its estimated turn, or until it becomes the head.
func (st *state) queued(t *Turn, n, front int64, head bool) {
	if head {
		t.nap, t.wake = max(front-horizon-n, 0), nil
		return
	}
	t.nap, t.wake = st.eta(n, front, st.q.ahead(t.w)), t.w.ch
}

// Wait returns how long, from now, the turn must still wait: 0 when it is
// due, more than Reserve said when a throttle, a Retry-After or a spent
// quota has put it off since. A turn that a throttle took gets another, at
// the back. The caller that Reserve told to wait calls Wait when it wakes,
// and waits again, or Releases the turn when the wait now exceeds what the
// request allows.
func (t *Turn) Wait(now time.Time) time.Duration {
	st := t.st
	if st == nil {
		return 0
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	n := st.ns(now)
	if !st.paced || st.gone || t.epoch != st.epoch {
		t.w, t.wake, t.nap = nil, nil, 0
		return 0
	}
	if t.w != nil {
		front := st.front(n)
		head := st.q.head() == t.w
		if !head || front-n > horizon {
			st.queued(t, n, front, head)
			return time.Duration(st.eta(n, front, st.q.ahead(t.w)))
		}
		// The head, its slot within the horizon: it takes it, and the
		// waiter behind it becomes the head.
		st.q.leave(t.w)
		t.w, t.wake = nil, nil
		t.n, t.at, t.rate, _ = st.sched.reserve(n, math.MaxInt64, st.pace(n))
		t.gen = st.sched.gen
		t.nap = max(t.at-n, 0)
		return time.Duration(t.nap)
	}
	slot, rate, ok := st.sched.slot(t.n, t.at, t.rate, t.gen)
	if !ok {
		t.n, slot, rate, _ = st.sched.reserve(n, math.MaxInt64, st.pace(n))
	}
	t.at, t.rate, t.gen = slot, rate, st.sched.gen
	t.nap = max(slot-n, 0)
	return time.Duration(t.nap)
}

// Release gives back at now a turn whose request was not sent. When it was
// the last turn given, the next turn given takes its slot.
func (t *Turn) Release(now time.Time) {
	st := t.st
	if st == nil {
		return
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	switch {
	case !st.paced || st.gone || t.epoch != st.epoch:
	case t.w != nil:
		st.q.leave(t.w)
		t.w, t.wake = nil, nil
	default:
		st.sched.release(st.ns(now), t.n, t.at, t.gen)
	}
}

// knownRate bounds the rates a Change reports: a rate above it was cut
// from none measured (a throttle of the first requests), and says nothing.
const knownRate = 1e6

// An Event is a key's change of state.
type Event uint8

const (
	// None: the key is paced as it was, or is still not paced.
	None Event = iota
	// Started: the key is paced from now on.
	Started
	// Stopped: the key is no longer paced.
	Stopped
)

// A Change is what an exchange changed of its key's pacing.
type Change struct {
	Event Event
	// Rate is the rate the key is paced at, in requests a second; 0 when
	// it is not paced, or not at a known rate (only held until a
	// Retry-After or the reset of a spent quota).
	Rate float64
}

// Observe learns from the response to a request to k sent at sent, read
// at now, with status and header h, and returns what changed: a throttle
// (429, or 503 with Retry-After) or a low quota makes k paced; a throttle
// cuts its rate, and a Retry-After holds its turns; a quota gives its rate,
// and a spent window holds them; a key that has had neither throttle nor
// low quota for 30 s is no longer paced.
func (p *Pacer) Observe(k Key, sent, now time.Time, status int, h http.Header) Change {
	throttle := status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable && wire.HasRetryAfter(h)
	q, hasQuota := readQuota(h, now)
	var delay time.Duration
	if throttle {
		delay = min(wire.RetryAfter(h, now, maxValueLen), time.Duration(p.holdLimit))
	}
	st := p.lookup(k)
	if st == nil {
		st = p.add(k, now)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.gone {
		return Change{}
	}
	n, s := st.ns(now), st.ns(sent)
	st.sent.add(s)
	if !throttle && s >= st.cycleStart {
		st.accepted++
	}
	// A quota low makes a key paced, and one at least half spent keeps it.
	pressed := throttle || hasQuota && (q.low() || st.paced && q.Limit > 0 && q.Remaining >= 0 && q.Remaining <= q.Limit/2)
	var c Change
	switch {
	case pressed && !st.paced:
		st.paced = true
		st.pacedNow.Store(true)
		p.paced.Add(1)
		c.Event = Started
	case !pressed && st.paced && st.expired(n):
		st.stop()
		p.paced.Add(-1)
		return Change{Event: Stopped}
	}
	if !st.paced {
		return c
	}
	if pressed {
		// A Retry-After that holds the key's turns keeps it paced for
		// the whole of the hold, and 30 s after.
		hold := int64(delay)
		if delay <= retryAfterGrain {
			hold = 0
		}
		st.pressure = max(st.pressure, addSat(n, hold))
	}
	if hasQuota {
		st.learnQuota(q, n, s)
	}
	if throttle {
		st.lastCut = max(st.lastCut, n)
		p.sh.throttled(p)
		until := addSat(n, int64(delay))
		if delay <= retryAfterGrain {
			// The wait asked for is the least the header says: the cut
			// is the answer, and the throttled request's own retry waits
			// the Retry-After out.
			until = n
		}
		st.throttled(n, s, until)
	}
	if r := st.rate(n); r < knownRate {
		c.Rate = r
	}
	return c
}

// Paced returns how many keys are paced at now: those throttled, or low on
// quota, within the last 30 s. It visits every key, for a gauge.
func (p *Pacer) Paced(now time.Time) int {
	n := 0
	p.keys.each(func(_ Key, st *state) bool {
		st.mu.Lock()
		if st.paced && !st.gone && !st.expired(st.ns(now)) {
			n++
		}
		st.mu.Unlock()
		return true
	})
	return n
}
