package retryhttp

import (
	"errors"
	"hash/maphash"
	"iter"
	"math"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/retryhttp/retryhttp/classify"
	"github.com/retryhttp/retryhttp/internal/config"
	"github.com/retryhttp/retryhttp/internal/layer"
	"github.com/retryhttp/retryhttp/internal/wire"
	"github.com/retryhttp/retryhttp/throttle"
)

// ErrThrottled is the error, wrapped in an *Error with no attempts, of a
// request that adaptive throttling (WithAdaptiveThrottling) refused without
// sending it, because its host has been failing.
var ErrThrottled = errors.New("retryhttp: throttled: the host has been failing")

// The defaults of adaptive throttling, stated in package throttle's docs.
const (
	defaultThrottleMultiplier   = 2.0
	defaultThrottleWindow       = 10 * time.Second
	defaultThrottleMaxRejection = 0.9
	defaultThrottleMinRequests  = 20
)

const (
	// throttleBuckets is how many buckets a window is counted in.
	throttleBuckets = 20
	// throttleProbeAfter is how many requests in a row a host may be
	// refused before one is sent whatever the probability, if none was
	// sent for throttleProbeSteps steps of the window: a probe, whose
	// success ends the refusals.
	throttleProbeAfter = 4
	throttleProbeSteps = 2
	// throttleMaxHosts bounds the hosts whose outcomes are counted.
	throttleMaxHosts = 1024
	// throttleCheckEvery is how many accepts a host counts without reading
	// the clock before it looks whether its window still holds a failure.
	throttleCheckEvery = 256
	// throttleCreditSpan and throttleCreditLife are, in steps of the
	// window, over how long a calm host's accepts are credited to it when
	// it fails, and how long the credit takes to fade: a host that
	// accepted every request a moment ago is refused nothing for its
	// first failures, and a host that flaps, up and down in turn, serves
	// its first good period.
	throttleCreditSpan = 4
	throttleCreditLife = 10
)

// throttling is how a Transport throttles: its configuration and the
// outcomes counted per host.
type throttling struct {
	k           float64
	width       time.Duration // of a bucket: the window over throttleBuckets
	maxReject   float64
	minRequests int64

	origin time.Time // the clock's zero: New's time

	share *throttleShare // nil unless the counts are shared (throttle.Shared)

	maxHosts int
	hosts    atomic.Pointer[throttleTable] // never modified once stored
	mu       sync.Mutex                    // serialises changes to hosts
	seed     maphash.Seed
}

func newThrottling(opts []throttle.Option) *throttling {
	c := config.Throttle{
		Multiplier:   defaultThrottleMultiplier,
		Window:       defaultThrottleWindow,
		MaxRejection: defaultThrottleMaxRejection,
		MinRequests:  defaultThrottleMinRequests,
	}
	for _, o := range opts {
		o(&c)
	}
	th := &throttling{
		k:           c.Multiplier,
		width:       c.Window / throttleBuckets,
		maxReject:   c.MaxRejection,
		minRequests: int64(c.MinRequests),
		maxHosts:    throttleMaxHosts,
	}
	if c.Store != nil {
		th.share = &throttleShare{store: c.Store.(throttle.Store), window: c.Window, wake: make(chan struct{}, 1)}
	}
	th.seed = maphash.MakeSeed()
	th.hosts.Store(newThrottleTable(nil))
	return th
}

// A hostThrottle counts the outcomes of one host's requests over the
// window, in buckets of time, as their attempts: a request is counted when
// it ends, every attempt of it accepted if it succeeded. A host that is not
// refusing requests (p is 0) counts a request that succeeded with one
// atomic add and no clock (pending); the pending accepts join the current
// bucket when the clock is next read, on a failure, a refusal, or every
// throttleCheckEvery accepts, unless the host is calm: then they measure
// its rate, for its credit when it first fails.
type hostThrottle struct {
	key     wire.HostKey  // normalised, as budget.PerHost keys a destination
	adopted bool          // made from the fleet's counts, not for a request of this process's
	p       atomic.Uint64 // the rejection probability's float64 bits; 0 admits without the clock
	pending atomic.Int64  // accepts not yet in a bucket
	last    atomic.Int64  // when the host last failed or refused, on th.clock: the LRU order
	// refusing is set while the log says the host is being refused: from
	// the line that says throttling started to the one that says it
	// ended. It changes only under mu.
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
	buckets  [throttleBuckets]throttleBucket
	folded   int64   // when pending was last emptied, on th.clock
	sent     int64   // when a request last failed, or was sent while refusing, on th.clock
	refused  int     // requests refused in a row since one was sent
	jitter   float64 // in [0, 1), drawn at sent, so that a fleet's processes probe apart
}

// A throttleBucket counts the attempts of the requests that ended in one
// step of the window, the accepted ones among them, and the requests
// refused in it.
type throttleBucket struct {
	step                       int64 // the step counted; older counts are stale
	requests, accepts, refused int64
}

// admit decides whether req may be sent. It returns the host's counts, if
// it has any, for record, and the rejection probability when it refuses.
// A host that was not refusing costs a lookup and a load.
func (th *throttling) admit(t *Transport, req *http.Request) (h *hostThrottle, p float64, ok bool) {
	if th.share != nil {
		th.share.tick(t, th)
	}
	scheme, host := spelling(req)
	h = th.hosts.Load().lookup(scheme, host, th.hash(scheme, host))
	if h == nil {
		scheme, host := spelling(req)
		return th.hostKey(scheme, host, th.clock(t), true), 0, true
	}
	if h.p.Load() == 0 {
		return h, 0, true
	}
	now := th.clock(t)
	h.mu.Lock()
	if p, ok = th.draw(t, h, now); ok {
		// A change to 0 is logged when the request ends, so that a request
		// logs at most one change.
		h.mu.Unlock()
		return h, 0, true
	}
	c := h.announce(th.update(h, now))
	h.mu.Unlock()
	t.logThrottleChange(req.Context(), h, c, p)
	return h, p, false
}

// draw decides whether a request, or a retry, to h, which is being refused
// requests, may be sent at now, and returns the host's rejection
// probability; a refusal is counted. h.mu must be held.
func (th *throttling) draw(t *Transport, h *hostThrottle, now int64) (p float64, ok bool) {
	p = th.update(h, now)
	if p == 0 || t.rand() >= p || th.probe(h, now) {
		if p > 0 {
			h.sent, h.refused, h.jitter = now, 0, t.rand()
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

// retry decides whether a retry of a request to the host of h may be
// sent. While the host is being refused requests, a retry is refused as a
// new request would be, so that what reaches a failing host is its share
// of what the callers send, retries included. A refused retry is counted
// as a refusal; its request ends with the outcome of its last attempt.
func (th *throttling) retry(t *Transport, h *hostThrottle) bool {
	if h == nil || h.p.Load() == 0 {
		return true
	}
	now := th.clock(t)
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := th.draw(t, h, now)
	return ok
}

// probe reports whether a request to h, which its probability would
// refuse, is sent all the same, as a probe: when the last
// throttleProbeAfter requests were refused and none was sent, nor failed,
// for a tenth of the window (throttleProbeSteps steps). So a host being
// refused is sent at least one request a tenth of the window and one in
// throttleProbeAfter+1, whichever is fewer, and the success of one ends
// the refusals: a host that heals gets every request again within a tenth
// of the window or a few requests, at any rate. A process sharing its
// counts through a Store that tells when the fleet last sent h a request
// probes when no process did for a tenth of the window; through one that
// does not, it waits its share of the fleet's requests times longer, drawn
// between half and one and a half of it, so that the processes probe
// apart. h.mu must be held.
func (th *throttling) probe(h *hostThrottle, now int64) bool {
	if th.fresh(h, now) && h.fleet.sent != 0 {
		// The fleet's Store says when a request was last sent to h: the
		// fleet probes as one process, each process in turn.
		return h.refused >= 1 && now-max(h.sent, h.fleet.sent) >= throttleProbeSteps*int64(th.width)
	}
	wait := throttleProbeSteps * float64(th.width)
	if share := th.shareOf(h, now); share > 1 {
		wait *= share * (0.5 + h.jitter)
	}
	return h.refused >= throttleProbeAfter && float64(now-h.sent) >= wait
}

// record counts the outcome of req, whose last attempt, the attempts-th,
// ended with verdict v, to the host of h (nil if it had no counts when the
// request was admitted). A verdict the classifier retries counts nothing
// yet: the request may still be rescued, and is counted when it ends, here
// or in gaveUp. Any other ends the request, which the host accepted, with
// every attempt it took: a request that retries rescued counts for its
// host, not against it. A request that ends so while the host is being
// refused requests ends the refusals: the host answers again, and what it
// did before no longer counts. The error of a caller who gave up says
// nothing of the host and is not counted. It reports whether the count
// started or ended the throttling of the host, which it logged.
func (th *throttling) record(t *Transport, h *hostThrottle, req *http.Request, err error, v classify.Verdict, attempts int) bool {
	if v.Decision == classify.Retry {
		return false // counted when the request ends
	}
	if h == nil || (err != nil && req.Context().Err() != nil) {
		return false // a host without counts has not failed lately
	}
	n := int64(max(attempts, 1))
	if h.p.Load() == 0 && !h.refusing.Load() {
		if h.pending.Add(n)%throttleCheckEvery < n {
			th.check(t, h)
		}
		return false
	}
	now := th.clock(t)
	h.mu.Lock()
	th.fold(h, now)
	if h.p.Load() != 0 {
		// The host answers again: what it did before no longer counts.
		h.buckets = [throttleBuckets]throttleBucket{}
		h.credit = 0
		th.share.heal(h)
	}
	th.count(h, now, n, n, 0)
	p := th.update(h, now)
	c := h.announce(p)
	h.mu.Unlock()
	return t.logThrottleChange(req.Context(), h, c, p)
}

// gaveUp counts req, whose retries ended after attempts attempts without
// rescuing it, for reason, as that many attempts its host did not accept.
// A refusal was counted when it was made; a request whose caller gave up,
// during a wait or an attempt, and one never sent (too little time left
// for its first attempt) are not counted: the host did nothing. It
// reports whether the count started or ended the throttling of the host,
// which it logged.
func (th *throttling) gaveUp(t *Transport, req *http.Request, attempts int, reason GiveUpReason, err error) bool {
	if attempts == 0 || reason == GiveUpCanceled || (err != nil && req.Context().Err() != nil) {
		return false
	}
	now := th.clock(t)
	scheme, host := spelling(req)
	h := th.hosts.Load().lookup(scheme, host, th.hash(scheme, host))
	if h == nil {
		h = th.host(req, now)
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
	h.sent, h.jitter = now, t.rand()
	p := th.update(h, now)
	c := h.announce(p)
	h.mu.Unlock()
	return t.logThrottleChange(req.Context(), h, c, p)
}

// A throttleChange is a change of whether a host is being refused
// requests, as the log tells it.
type throttleChange uint8

const (
	throttleSame throttleChange = iota
	throttleStarted
	throttleEnded
)

// announce returns the change of h's throttling that the log has yet to
// tell, now that its rejection probability is p, and takes it as told.
// It is called where a request ends, and where one is refused, so that a
// request finds at most one change. A host forgotten to make room for
// another while it was being refused ends without a line. h.mu must be
// held.
func (h *hostThrottle) announce(p float64) throttleChange {
	switch refusing := h.refusing.Load(); {
	case p > 0 && !refusing:
		h.refusing.Store(true)
		return throttleStarted
	case p == 0 && refusing:
		h.refusing.Store(false)
		return throttleEnded
	}
	return throttleSame
}

// check looks, every throttleCheckEvery accepts, whether the window of h
// still holds a request it did not accept; if not, h is forgotten, so that
// the requests to a healthy host cost nothing to count.
func (th *throttling) check(t *Transport, h *hostThrottle) {
	now := th.clock(t)
	h.mu.Lock()
	defer h.mu.Unlock()
	th.fold(h, now)
	if req, acc, _ := th.evidence(h, now); req == acc && !h.calm {
		// Calm again: its accepts measure its rate from now on.
		h.calm, h.credit = true, 0
		h.buckets = [throttleBuckets]throttleBucket{}
	}
}

// clock returns the time since th.origin on t's clock, monotonic when the
// clock is.
func (th *throttling) clock(t *Transport) int64 { return int64(t.now().Sub(th.origin)) }

// step returns the step of the window at now.
func (th *throttling) step(now int64) int64 { return now / int64(th.width) }

// bucket returns the bucket of step, emptied if it held an older step.
// h.mu must be held.
func (h *hostThrottle) bucket(step int64) *throttleBucket {
	b := &h.buckets[(step%throttleBuckets+throttleBuckets)%throttleBuckets]
	if b.step != step {
		*b = throttleBucket{step: step}
	}
	return b
}

// fold moves the pending accepts of h into the current bucket. When they
// were counted over more than a window, only the share of the window is
// kept, as if they had come at an even rate. h.mu must be held.
func (th *throttling) fold(h *hostThrottle, now int64) {
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
	if window := int64(th.width) * throttleBuckets; span > window {
		n = int64(float64(n) * float64(window) / float64(span))
	}
	th.count(h, now, n, n, 0)
}

// creditOf returns what is left at now of the credit of h, none while
// it is throttled on the fleet's counts. h.mu must be held.
func (th *throttling) creditOf(h *hostThrottle, now int64) int64 {
	if h.credit == 0 || th.fresh(h, now) {
		return 0
	}
	life := float64(th.width) * throttleCreditLife
	return int64(h.credit * max(0, 1-float64(now-h.creditAt)/life))
}

// measure keeps the pending accepts of h, a calm host, as those of the
// last credit span at most, at the rate they came, and credits them to h
// if it failed, which ends its calm. h.mu must be held.
func (th *throttling) measure(h *hostThrottle, now int64) {
	span := int64(th.width) * throttleCreditSpan
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
func (th *throttling) count(h *hostThrottle, now, requests, accepts, refused int64) {
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
func (th *throttling) sums(h *hostThrottle, step int64) (requests, accepts, refused int64) {
	for i := range h.buckets {
		if b := &h.buckets[i]; b.step > step-throttleBuckets {
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
func (th *throttling) update(h *hostThrottle, now int64) float64 {
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

// shed ends req, refused by adaptive throttling with probability p, before
// any attempt: it closes the body, logs and reports the refusal, and tells
// a server.Handler serving the request that a dependency was shed.
func (t *Transport) shed(req *http.Request, p float64) (*http.Response, error) {
	if req.Body != nil {
		req.Body.Close()
	}
	t.logRefusal(req, p)
	t.reportGiveUp(req, GiveUpThrottled, ErrThrottled)
	layer.MarkShed(req.Context())
	return nil, &Error{Err: ErrThrottled}
}

// Rejections returns an iterator over the hosts whose outcomes adaptive
// throttling counts, with the probability that a request to each is refused
// now, in no particular order, for a gauge: every host requested lately, at
// most 1024.
// Without WithAdaptiveThrottling it yields nothing. Each host is locked
// briefly while its probability is computed.
func (t *Transport) Rejections() iter.Seq[throttle.Rejection] {
	t = t.ready()
	return func(yield func(throttle.Rejection) bool) {
		th := t.throttle
		if th == nil {
			return
		}
		for h := range th.hosts.Load().all() {
			now := th.clock(t)
			h.mu.Lock()
			p := th.update(h, now)
			h.mu.Unlock()
			if !yield(throttle.Rejection{Scheme: h.key.Scheme, Host: h.key.Host, Probability: p}) {
				return
			}
		}
	}
}
