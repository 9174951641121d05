// Package throttling is adaptive throttling (retryhttp.WithAdaptiveThrottling),
// the client-side throttling of Google's SRE book, per host. Given each
// request's host, how it ended (accepted, or not, after how many attempts)
// and a clock, a Throttler decides whether a request, or a retry, is
// refused, when one is sent all the same as a probe, and, when the counts
// are shared (throttle.Shared), what it exchanges with the throttle.Store.
//
// It never sends a request, never logs and never sleeps on a request's
// path. The Transport that owns it sends, and logs what the Throttler
// returns: a Change when a count starts or ends the refusals of a host,
// and the Store's first panic (Env.StorePanicked). The exchanges with a
// Store run on a goroutine of the Throttler's own, while requests are
// admitted and for a window after the last.
package throttling

import (
	"hash/maphash"
	"iter"
	"math"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/retryhttp/retryhttp/classify"
	"github.com/retryhttp/retryhttp/internal/config"
	"github.com/retryhttp/retryhttp/internal/wire"
	"github.com/retryhttp/retryhttp/throttle"
)

// The defaults of adaptive throttling, stated in package throttle's docs.
const (
	DefaultMultiplier   = 2.0
	DefaultWindow       = 10 * time.Second
	DefaultMaxRejection = 0.9
	DefaultMinRequests  = 20
)

// MaxHosts bounds the hosts whose outcomes a Throttler counts: when its
// table is full, the host that failed least recently is forgotten to make
// room for a new one.
const MaxHosts = 1024

const (
	// buckets is how many buckets a window is counted in.
	buckets = 20
	// probeAfter is how many requests in a row a host may be refused
	// before one is sent whatever the probability, if none was sent for
	// probeSteps steps of the window: a probe, whose success ends the
	// refusals.
	probeAfter = 4
	probeSteps = 2
	// checkEvery is how many accepts a host counts without reading the
	// clock before it looks whether its window still holds a failure.
	checkEvery = 256
	// creditSpan and creditLife are, in steps of the window, over how long
	// a calm host's accepts are credited to it when it fails, and how long
	// the credit takes to fade: a host that accepted every request a
	// moment ago is refused nothing for its first failures, and a host
	// that flaps, up and down in turn, serves its first good period.
	creditSpan = 4
	creditLife = 10
)

// Env is what a Throttler reads of the Transport that owns it. Its
// functions are called at each use, so that the Transport may change what
// they read after New (its in-package tests replace its clock and random
// source).
type Env struct {
	// Now is the clock. The Throttler counts time from its reading at New,
	// monotonic when the clock is.
	Now func() time.Time
	// Rand is the random source of refusals and of probes' jitter,
	// uniform in [0, 1).
	Rand func() float64
	// StorePanicked, if not nil, is called with the value of the first
	// panic of the Store's Exchange, once a Throttler. A Store that panics
	// fails the exchange, as one that returns an error does: it runs on
	// the Throttler's own goroutine, where no caller could recover it.
	StorePanicked func(r any)
}

// A Throttler is the adaptive throttling of a Transport: its
// configuration and the outcomes counted per host. It is safe for
// concurrent use.
type Throttler struct {
	cfg         config.Throttle
	k           float64
	width       time.Duration // of a bucket: the window over buckets
	maxReject   float64
	minRequests int64

	env    Env
	origin time.Time // the clock's zero: New's time

	share *share // nil unless the counts are shared (throttle.Shared)

	maxHosts int
	hosts    atomic.Pointer[table] // never modified once stored
	mu       sync.Mutex            // serialises changes to hosts
	seed     maphash.Seed
}

// New returns a Throttler configured by opts over the defaults, which
// reads env. When opts share the counts through a throttle.Store, the
// Throttler exchanges them from the first request it admits.
func New(opts []throttle.Option, env Env) *Throttler {
	c := config.Throttle{
		Multiplier:   DefaultMultiplier,
		Window:       DefaultWindow,
		MaxRejection: DefaultMaxRejection,
		MinRequests:  DefaultMinRequests,
	}
	for _, o := range opts {
		o(&c)
	}
	th := &Throttler{
		cfg:         c,
		k:           c.Multiplier,
		width:       c.Window / buckets,
		maxReject:   c.MaxRejection,
		minRequests: int64(c.MinRequests),
		env:         env,
		maxHosts:    MaxHosts,
	}
	if c.Store != nil {
		th.share = &share{store: c.Store.(throttle.Store), window: c.Window, wake: make(chan struct{}, 1)}
	}
	th.seed = maphash.MakeSeed()
	th.hosts.Store(newTable(nil))
	th.origin = env.Now()
	return th
}

// Config returns the configuration th applies: its options over the
// defaults.
func (th *Throttler) Config() config.Throttle { return th.cfg }

// A Host counts the outcomes of one host's requests over the window, in
// buckets of time, as their attempts: a request is counted when it ends,
// every attempt of it accepted if it succeeded. A host that is not
// refusing requests (p is 0) counts a request that succeeded with one
// atomic add and no clock (pending); the pending accepts join the current
// bucket when the clock is next read, on a failure, a refusal, or every
// checkEvery accepts, unless the host is calm: then they measure its
// rate, for its credit when it first fails.
type Host struct {
	key     wire.HostKey  // normalised, as budget.PerHost keys a destination
	adopted bool          // made from the fleet's counts, not for a request of this process's
	p       atomic.Uint64 // the rejection probability's float64 bits; 0 admits without the clock
	pending atomic.Int64  // accepts not yet in a bucket
	last    atomic.Int64  // when the host last failed or refused, on th.clock: the LRU order
	// refusing is set while the Transport's log says the host is being
	// refused: from the Change that says throttling started to the one
	// that says it ended. It changes only under mu.
	refusing atomic.Bool

	mu     sync.Mutex // guards the fields below
	shared            // the counts shared with a fleet, if they are
	// calm is set while the window holds no failure: the pending accepts
	// are then a measure of the host's rate, not counts of the window.
	calm bool
	// credit is the accepts the host is credited with when it first
	// fails after a calm period: what it accepted over the last credit
	// span, fading over the credit life from creditAt on th.clock.
	credit   float64
	creditAt int64
	buckets  [buckets]bucket
	folded   int64   // when pending was last emptied, on th.clock
	sent     int64   // when a request last failed, or was sent while refusing, on th.clock
	refused  int     // requests refused in a row since one was sent
	jitter   float64 // in [0, 1), drawn at sent, so that a fleet's processes probe apart
}

// A bucket counts the attempts of the requests that ended in one step of
// the window, the accepted ones among them, and the requests refused in
// it.
type bucket struct {
	step                       int64 // the step counted; older counts are stale
	requests, accepts, refused int64
}

// A Kind is whether a count changed the refusals of a host.
type Kind uint8

const (
	// Same: the host is refused requests, or not, as it was.
	Same Kind = iota
	// Started: the host is being refused requests, from now on.
	Started
	// Ended: the host is no longer refused requests.
	Ended
)

// A Change is a change of whether a host is being refused requests, for
// the Transport to log: the zero Change (Kind Same) is none. A Throttler
// returns each change once, to the request that finds it: a request finds
// at most one. A host forgotten to make room for another while it was
// being refused ends without one. It is three words, its host's counts
// standing for the host's key, since every request that ends returns one:
// with the key, the Transport's success path took 15-20 ns longer.
type Change struct {
	Kind Kind
	h    *Host // nil in the zero Change
	// Probability is the host's rejection probability after the change:
	// 0 when it Ended.
	Probability float64
}

// Host returns the destination of the host whose refusals changed,
// normalised. c must not be the zero Change.
func (c Change) Host() wire.HostKey { return c.h.key }

// Admit decides whether req may be sent. It returns the host's counts, if
// it has any, for Retry and Record, and the rejection probability when it
// refuses, with the change a refusal finds. A host that was not refusing
// costs a lookup and a load.
func (th *Throttler) Admit(req *http.Request) (h *Host, p float64, ok bool, c Change) {
	if th.share != nil {
		th.share.tick(th)
	}
	scheme, host := spelling(req)
	h = th.hosts.Load().lookup(scheme, host, th.hash(scheme, host))
	if h == nil {
		return th.hostKey(scheme, host, th.clock(), true), 0, true, Change{}
	}
	if h.p.Load() == 0 {
		return h, 0, true, Change{}
	}
	now := th.clock()
	h.mu.Lock()
	if p, ok = th.draw(h, now); ok {
		// A change to 0 is told when the request ends, so that a request
		// finds at most one change.
		h.mu.Unlock()
		return h, 0, true, Change{}
	}
	c = h.announce(th.update(h, now))
	h.mu.Unlock()
	return h, p, false, c
}

// draw decides whether a request, or a retry, to h, which is being refused
// requests, may be sent at now, and returns the host's rejection
// probability; a refusal is counted. h.mu must be held.
func (th *Throttler) draw(h *Host, now int64) (p float64, ok bool) {
	p = th.update(h, now)
	if p == 0 || th.env.Rand() >= p || th.probe(h, now) {
		if p > 0 {
			h.sent, h.refused, h.jitter = now, 0, th.env.Rand()
			if th.share != nil {
				h.unsent.sent = now
				th.share.soon() // so that the others wait for it
			}
		}
		return p, true
	}
	th.count(h, now, 0, 0, 1)
	h.refused++
	h.last.Store(now)
	return p, false
}

// Retry decides whether a retry of a request to the host of h, as Admit
// returned it (nil for none), may be sent. While the host is being refused
// requests, a retry is refused as a new request would be, so that what
// reaches a failing host is its share of what the callers send, retries
// included. A refused retry is counted as a refusal; its request ends with
// the outcome of its last attempt.
func (th *Throttler) Retry(h *Host) bool {
	if h == nil || h.p.Load() == 0 {
		return true
	}
	now := th.clock()
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := th.draw(h, now)
	return ok
}

// probe reports whether a request to h, which its probability would
// refuse, is sent all the same, as a probe: when the last probeAfter
// requests were refused and none was sent, nor failed, for a tenth of the
// window (probeSteps steps). So a host being refused is sent at least one
// request a tenth of the window and one in probeAfter+1, whichever is
// fewer, and the success of one ends the refusals: a host that heals gets
// every request again within a tenth of the window or a few requests, at
// any rate. A process sharing its counts through a Store that tells when
// the fleet last sent h a request probes when no process did for a tenth
// of the window; through one that does not, it waits its share of the
// fleet's requests times longer, drawn between half and one and a half of
// it, so that the processes probe apart. h.mu must be held.
func (th *Throttler) probe(h *Host, now int64) bool {
	if th.fresh(h, now) && h.fleet.sent != 0 {
		// The fleet's Store says when a request was last sent to h: the
		// fleet probes as one process, each process in turn.
		return h.refused >= 1 && now-max(h.sent, h.fleet.sent) >= probeSteps*int64(th.width)
	}
	wait := probeSteps * float64(th.width)
	if share := th.shareOf(h, now); share > 1 {
		wait *= share * (0.5 + h.jitter)
	}
	return h.refused >= probeAfter && float64(now-h.sent) >= wait
}

// Record counts the outcome of req, whose last attempt, the attempts-th,
// ended with err and verdict v, to the host of h, as Admit returned it
// (nil if it had no counts when the request was admitted). A verdict the
// classifier retries counts nothing yet: the request may still be rescued,
// and is counted when it ends, here or in GaveUp. Any other ends the
// request, which the host accepted, with every attempt it took: a request
// that retries rescued counts for its host, not against it. A request that
// ends so while the host is being refused requests ends the refusals: the
// host answers again, and what it did before no longer counts. The error
// of a caller who gave up says nothing of the host and is not counted. It
// returns the change the count made, if any.
func (th *Throttler) Record(h *Host, req *http.Request, err error, v classify.Verdict, attempts int) Change {
	if v.Decision == classify.Retry {
		return Change{} // counted when the request ends
	}
	if h == nil || (err != nil && req.Context().Err() != nil) {
		return Change{} // a host without counts has not failed lately
	}
	n := int64(max(attempts, 1))
	if h.p.Load() == 0 && !h.refusing.Load() {
		if h.pending.Add(n)%checkEvery < n {
			th.check(h)
		}
		return Change{}
	}
	now := th.clock()
	h.mu.Lock()
	th.fold(h, now)
	if h.p.Load() != 0 {
		// The host answers again: what it did before no longer counts.
		h.buckets = [buckets]bucket{}
		h.credit = 0
		th.share.heal(h)
	}
	th.count(h, now, n, n, 0)
	c := h.announce(th.update(h, now))
	h.mu.Unlock()
	return c
}

// GaveUp counts req, whose retries ended after attempts attempts without
// rescuing it, with err, as that many attempts its host did not accept.
// A refusal was counted when it was made; a request whose caller gave up,
// during a wait (canceled) or an attempt, and one never sent (too little
// time left for its first attempt, attempts 0) are not counted: the host
// did nothing. It returns the change the count made, if any.
func (th *Throttler) GaveUp(req *http.Request, attempts int, canceled bool, err error) Change {
	if attempts == 0 || canceled || (err != nil && req.Context().Err() != nil) {
		return Change{}
	}
	now := th.clock()
	scheme, host := spelling(req)
	h := th.hosts.Load().lookup(scheme, host, th.hash(scheme, host))
	if h == nil {
		h = th.hostKey(scheme, host, now, false)
	}
	h.mu.Lock()
	th.fold(h, now)
	if h.calm {
		// What it accepted lately is credited to it, fading.
		h.credit, h.creditAt = float64(h.pending.Swap(0)), now
		h.folded, h.calm = now, false
	}
	th.count(h, now, int64(attempts), 0, 0)
	h.last.Store(now)
	h.sent, h.jitter = now, th.env.Rand()
	c := h.announce(th.update(h, now))
	h.mu.Unlock()
	return c
}

// announce returns the change of h's throttling that the Transport has yet
// to tell, now that its rejection probability is p, and takes it as told.
// It is called where a request ends, and where one is refused, so that a
// request finds at most one change. h.mu must be held.
func (h *Host) announce(p float64) Change {
	switch refusing := h.refusing.Load(); {
	case p > 0 && !refusing:
		h.refusing.Store(true)
		return Change{Kind: Started, h: h, Probability: p}
	case p == 0 && refusing:
		h.refusing.Store(false)
		return Change{Kind: Ended, h: h}
	}
	return Change{}
}

// check looks, every checkEvery accepts, whether the window of h still
// holds a request it did not accept; if not, h is calm, so that the
// requests to a healthy host cost nothing to count.
func (th *Throttler) check(h *Host) {
	now := th.clock()
	h.mu.Lock()
	defer h.mu.Unlock()
	th.fold(h, now)
	if req, acc, _ := th.evidence(h, now); req == acc && !h.calm {
		// Calm again: its accepts measure its rate from now on.
		h.calm, h.credit = true, 0
		h.buckets = [buckets]bucket{}
	}
}

// clock returns the time since th.origin on the Transport's clock,
// monotonic when the clock is.
func (th *Throttler) clock() int64 { return int64(th.env.Now().Sub(th.origin)) }

// step returns the step of the window at now.
func (th *Throttler) step(now int64) int64 { return now / int64(th.width) }

// bucket returns the bucket of step, emptied if it held an older step.
// h.mu must be held.
func (h *Host) bucket(step int64) *bucket {
	b := &h.buckets[(step%buckets+buckets)%buckets]
	if b.step != step {
		*b = bucket{step: step}
	}
	return b
}

// fold moves the pending accepts of h into the current bucket. When they
// were counted over more than a window, only the share of the window is
// kept, as if they had come at an even rate. h.mu must be held.
func (th *Throttler) fold(h *Host, now int64) {
	if h.calm {
		th.measure(h, now)
		return
	}
	n := h.pending.Swap(0)
	span := now - h.folded
	h.folded = now
	if n == 0 {
		return
	}
	if window := int64(th.width) * buckets; span > window {
		n = int64(float64(n) * float64(window) / float64(span))
	}
	th.count(h, now, n, n, 0)
}

// creditOf returns what is left at now of the credit of h, none while
// it is throttled on the fleet's counts. h.mu must be held.
func (th *Throttler) creditOf(h *Host, now int64) int64 {
	if h.credit == 0 || th.fresh(h, now) {
		return 0
	}
	life := float64(th.width) * creditLife
	return int64(h.credit * max(0, 1-float64(now-h.creditAt)/life))
}

// measure keeps the pending accepts of h, a calm host, as those of the
// last credit span at most, at the rate they came, and credits them to h
// if it failed, which ends its calm. h.mu must be held.
func (th *Throttler) measure(h *Host, now int64) {
	span := int64(th.width) * creditSpan
	if elapsed := now - h.folded; elapsed > span {
		n := h.pending.Load()
		kept := int64(float64(n) * float64(span) / float64(elapsed))
		h.pending.Add(kept - n)
		h.folded = now - span
	}
}

// count adds to the window of h, at now, requests attempts, of which
// accepts were accepted, and refused refusals; and to what the next
// exchange shares, if the counts are shared. h.mu must be held.
func (th *Throttler) count(h *Host, now, requests, accepts, refused int64) {
	b := h.bucket(th.step(now))
	b.requests += requests
	b.accepts += accepts
	b.refused += refused
	if th.share != nil {
		h.unsent.add(requests, accepts, refused)
	}
}

// sums returns the attempts, the accepts and the refusals in the window
// ending at step. h.mu must be held.
func (th *Throttler) sums(h *Host, step int64) (requests, accepts, refused int64) {
	for i := range h.buckets {
		if b := &h.buckets[i]; b.step > step-buckets {
			requests += b.requests
			accepts += b.accepts
			refused += b.refused
		}
	}
	return requests, accepts, refused
}

// update computes the rejection probability of h at now, stores it and
// returns it: max(0, (requests - K·accepts) / (requests + 1)) over the
// window's attempts, at most maxReject, and 0 while the window holds fewer
// than minRequests attempts and refusals. A refusal is no evidence against
// the host: it counts only towards minRequests, so that the refusals of a
// host never keep it refused once its failures leave the window. h.mu must
// be held.
func (th *Throttler) update(h *Host, now int64) float64 {
	th.fold(h, now)
	req, acc, refused := th.evidence(h, now)
	if c := th.creditOf(h, now); c > 0 {
		req, acc = req+c, acc+c
	}
	p := 0.0
	if req+refused >= th.minRequests {
		if x := (float64(req) - th.k*float64(acc)) / float64(req+1); x > 0 {
			p = min(x, th.maxReject)
		}
	}
	h.p.Store(math.Float64bits(p))
	return p
}

// Rejections returns an iterator over the hosts th counts the outcomes
// of, with the probability that a request to each is refused now, in no
// particular order: every host requested lately, at most MaxHosts. Each
// host is locked briefly while its probability is computed.
func (th *Throttler) Rejections() iter.Seq[throttle.Rejection] {
	return func(yield func(throttle.Rejection) bool) {
		for h := range th.hosts.Load().all() {
			now := th.clock()
			h.mu.Lock()
			p := th.update(h, now)
			h.mu.Unlock()
			if !yield(throttle.Rejection{Scheme: h.key.Scheme, Host: h.key.Host, Probability: p}) {
				return
			}
		}
	}
}

// Window returns the attempts and the accepted attempts that the window
// of the destination scheme and host spell holds now, of this process's
// own counts, as the rejection probability sees them when the counts are
// not shared; 0 and 0 for a host th does not count. It is for tests, which
// read what a Transport counted.
func (th *Throttler) Window(scheme, host string) (requests, accepts int64) {
	h := th.hosts.Load().lookup(scheme, host, th.hash(scheme, host))
	if h == nil {
		return 0, 0
	}
	now := th.clock()
	h.mu.Lock()
	defer h.mu.Unlock()
	th.fold(h, now)
	requests, accepts, _ = th.sums(h, th.step(now))
	return requests, accepts
}
