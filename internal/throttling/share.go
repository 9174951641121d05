package throttling

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/retryhttp/retryhttp/internal/wire"
	"github.com/retryhttp/retryhttp/throttle"
)

// freshSteps is how many steps of the window the fleet's counts of a
// host stay in use after the exchange that brought them.
const freshSteps = 4

// exchanges is how many exchanges a step of the window has, and
// refusingExchanges how many while a host is being refused, so
// that news of its healing spreads fast.
const (
	exchanges         = 2
	refusingExchanges = 4
)

// maxCount bounds the counts taken from a Store, far above what a
// fleet counts in a window, so that sums of them cannot overflow.
const maxCount = 1 << 48

// A share exchanges the counts of a Throttler's hosts with the
// other processes of a fleet through a throttle.Store: twice a step of the
// window, four times while a host is being refused, and at once when a
// refused host is sent a request or a success ends its refusals, from a
// goroutine that runs while requests are sent and for a window after the
// last.
type share struct {
	store  throttle.Store
	window time.Duration
	wake   chan struct{} // a probe or a heal to share at once

	running  atomic.Bool
	seen     atomic.Bool // a request was admitted since the exchanges last looked
	ok       atomic.Bool // the last exchange succeeded
	panicked atomic.Bool // the Store panicked once: reported

	// Buffers the exchanges reuse.
	hosts   []sentCounts
	fleet   map[wire.HostKey]counts
	foreign []wire.HostKey
}

// sentCounts are the counts of a host an exchange sends, and the host's
// heals when it took them.
type sentCounts struct {
	h     *Host
	c     counts
	heals uint64
}

// shared is what a host's counts add when they are shared: what the next
// exchange sends, and the fleet's counts from the last. The fields are
// guarded by the host's mu.
type shared struct {
	unsent  counts  // counted since the last exchange
	fleet   counts  // the fleet's over the window, this process's included
	fleetAt int64   // when fleet came, on th.clock; 0 if it never did
	heals   uint64  // successes that ended refusals: an exchange sent before one brings stale counts
	scale   float64 // the fleet's requests per this process's at the last exchange, at least 1
	ahead   int64   // the latest Sent the fleet gave ahead of this process's clock, on th.clock (fleetSent)
}

// counts are counts of a host's requests, as a throttle.Counts has
// them.
type counts struct {
	requests, accepts, refused int64
	healed                     bool
	sent                       int64 // when a request was last sent while refusing, on th.clock; 0 if none
}

func (c *counts) add(requests, accepts, refused int64) {
	c.requests += requests
	c.accepts += accepts
	c.refused += refused
}

// tick notes a request to be admitted, and starts the exchanges if they
// are not running. It reads no clock: the exchanges time the requests they
// see. A request writes the flag only when the exchanges have taken it
// since, so that concurrent requests do not contend for it.
func (s *share) tick(th *Throttler) {
	if !s.seen.Load() {
		s.seen.Store(true)
	}
	if !s.running.Load() && s.running.CompareAndSwap(false, true) {
		go s.run(th)
	}
}

// run exchanges the counts twice a step of the window (four times while a
// host is being refused), and at once after a probe or a heal, until it
// has seen no request admitted for a window.
func (s *share) run(th *Throttler) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	last := th.clock() // when a request was last seen admitted
	for {
		every := th.width / exchanges
		if s.exchange(th) {
			every = th.width / refusingExchanges
		}
		timer.Reset(every)
		select {
		case <-timer.C:
		case <-s.wake:
		}
		now := th.clock()
		if s.seen.Swap(false) {
			last = now
		}
		if now-last < int64(s.window) {
			continue
		}
		s.running.Store(false)
		// A request admitted since the look above, which saw the
		// exchanges running, restarts them here.
		if !s.seen.Load() || !s.running.CompareAndSwap(false, true) {
			return
		}
	}
}

// exchange sends the counts of every host counted since the last exchange,
// and takes the fleet's in their place. When the Store fails, the counts
// sent are kept for the next exchange, and each host is throttled on its
// own counts until an exchange succeeds. It reports whether a host is
// being refused requests. The exchanges of a Throttler run one at a
// time, on one goroutine: they reuse their buffers.
func (s *share) exchange(th *Throttler) (refusing bool) {
	now := th.clock()
	hosts := s.hosts[:0]
	defer func() { s.hosts = hosts[:0] }()
	var out []throttle.Counts
	for h := range th.hosts.Load().all() {
		h.mu.Lock()
		th.fold(h, now)
		c := h.unsent
		h.unsent = counts{}
		heals := h.heals
		h.mu.Unlock()
		hosts = append(hosts, sentCounts{h, c, heals})
		if c != (counts{}) {
			out = append(out, throttle.Counts{Scheme: h.key.Scheme, Host: h.key.Host,
				Attempts: c.requests, Accepted: c.accepts, Refused: c.refused, Healed: c.healed, Sent: th.at(c.sent)})
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), freshSteps*th.width)
	defer cancel()
	got, err := s.call(ctx, th, out)
	now = th.clock()
	if err != nil {
		s.ok.Store(false)
		for _, x := range hosts {
			x.h.mu.Lock()
			if x.h.heals == x.heals { // else counts before a heal, which no longer count
				x.h.unsent.add(x.c.requests, x.c.accepts, x.c.refused)
				x.h.unsent.healed = x.h.unsent.healed || x.c.healed
				x.h.unsent.sent = max(x.h.unsent.sent, x.c.sent)
			}
			x.h.mu.Unlock()
		}
		return false
	}
	s.ok.Store(true)
	// The fleet's counts of this process's hosts, and of as many hosts
	// the fleet counts failures of and this process has not as its table
	// has room for: what a Store returns beyond those costs nothing.
	if s.fleet == nil {
		s.fleet = make(map[wire.HostKey]counts, len(hosts))
	}
	fleet := s.fleet
	defer clear(fleet)
	for _, x := range hosts {
		fleet[x.h.key] = counts{}
	}
	room := th.maxHosts / 2 // adopt takes fewer still
	foreign := s.foreign[:0]
	defer func() { s.foreign = foreign[:0] }()
	for _, c := range got {
		if c.Host == "" || c.Accepted < 0 || c.Accepted > c.Attempts || c.Attempts > maxCount ||
			c.Refused < 0 || c.Refused > maxCount {
			continue // not counts a Store should return
		}
		k := wire.MakeKey(c.Scheme, c.Host)
		if _, own := fleet[k]; !own {
			if c.Attempts == c.Accepted || len(foreign) >= room {
				continue
			}
			foreign = append(foreign, k)
		}
		fleet[k] = counts{requests: c.Attempts, accepts: c.Accepted, refused: c.Refused, sent: th.since(c.Sent)}
	}
	for _, x := range hosts {
		refusing = th.take(x.h, fleet[x.h.key], x.heals, now) || refusing
	}
	for k, h := range th.adopt(foreign, now) {
		refusing = th.take(h, fleet[k], 0, now) || refusing
	}
	return refusing
}

// fleetSent returns at, the latest time the fleet sent h, a refused host,
// a request as an exchange at now brought it (on th.clock, 0 for none), as
// h is throttled on it. A Sent a little ahead of this process's clock, up
// to a tenth of a step, counts as now. One further ahead comes from a
// clock that runs ahead, and says only that some process probed the host
// at some time: taken for now at every exchange, it would stop every
// process's probes, since a Store keeps the latest Sent it is given; and
// once this process's clock passes it, it would seem a probe that was
// never sent. It counts, from the exchange that first brings it ahead
// until the fleet gives a later one, as a probe's interval ago
// (probeSteps): each process then probes h as it would on its
// own, once its own last request to it is that old. h.mu must be held.
func (th *Throttler) fleetSent(h *Host, at, now int64) int64 {
	interval := probeSteps * int64(th.width)
	switch {
	case at > now+int64(th.width)/10:
		h.ahead = max(h.ahead, at)
		return max(now-interval, 1)
	case at != 0 && at == h.ahead:
		return max(now-interval, 1)
	}
	return min(at, now)
}

// call runs the Store's Exchange of out. A Store that panics fails the
// exchange, as one that returns an error does: it runs on the Throttler's
// own goroutine, where no caller could recover it. The first panic is
// reported to Env.StorePanicked, once a Throttler.
func (s *share) call(ctx context.Context, th *Throttler, out []throttle.Counts) (got []throttle.Counts, err error) {
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		got, err = nil, fmt.Errorf("retryhttp: throttle.Store panicked: %v", r)
		if s.panicked.CompareAndSwap(false, true) && th.env.StorePanicked != nil {
			th.env.StorePanicked(r)
		}
	}()
	return s.store.Exchange(ctx, s.window, out)
}

// take makes c, the fleet's counts of h, those h is throttled on, unless a
// success ended its refusals since the exchange that brought them was
// sent (heals has changed); c.sent is the Store's Sent on th.clock, as
// fleetSent takes it. It reports whether h is being refused requests.
func (th *Throttler) take(h *Host, c counts, heals uint64, now int64) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.heals != heals {
		return false
	}
	c.sent = th.fleetSent(h, c.sent, now)
	h.fleet, h.fleetAt = c, now
	h.scale = th.shareOf(h, now)
	return th.update(h, now) > 0
}

// heal notes that a success ended the refusals of h: the next exchange
// tells the fleet, and the fleet's counts before it no longer count.
// h.mu must be held.
func (s *share) heal(h *Host) {
	if s == nil {
		return
	}
	h.unsent = counts{healed: true}
	h.fleet, h.scale = counts{}, 1
	h.heals++
	s.soon()
}

// soon has the next exchange run at once.
func (s *share) soon() {
	select {
	case s.wake <- struct{}{}:
	default: // a wake is pending already
	}
}

// fresh reports whether h is throttled on the fleet's counts at now: the
// last exchange succeeded and brought counts of h within freshSteps
// steps. h.mu must be held.
func (th *Throttler) fresh(h *Host, now int64) bool {
	return th.share != nil && th.share.ok.Load() && h.fleetAt != 0 && now-h.fleetAt <= freshSteps*int64(th.width)
}

// evidence returns the attempts, the accepts and the refusals that h is
// throttled on at now: the fleet's, with what this process counted since
// the last exchange, while they are fresh. Otherwise, its own window's;
// but a process that loses its Store takes its own counts for its share
// of the fleet's, as at the last exchange, and adds the fleet's last
// counts, fading over a window, so that it goes on throttling as the
// fleet did. h.mu must be held.
func (th *Throttler) evidence(h *Host, now int64) (requests, accepts, refused int64) {
	if th.fresh(h, now) {
		return h.fleet.requests + h.unsent.requests, h.fleet.accepts + h.unsent.accepts, h.fleet.refused + h.unsent.refused
	}
	requests, accepts, refused = th.sums(h, th.step(now))
	if th.share == nil || h.fleetAt == 0 {
		return requests, accepts, refused
	}
	scale := max(h.scale, 1)
	fade := 0.0
	if window := int64(th.width) * buckets; now-h.fleetAt < window {
		fade = float64(window-(now-h.fleetAt)) / float64(window)
	}
	mix := func(own, fleet int64) int64 { return int64(scale*float64(own) + fade*float64(fleet)) }
	return mix(requests, h.fleet.requests), mix(accepts, h.fleet.accepts), mix(refused, h.fleet.refused)
}

// shareOf returns how many times more requests the fleet sends h than
// this process does, over the window, at least 1: 1 when the counts are
// not shared. A probe of h waits about that many times longer (probe).
// h.mu must be held.
func (th *Throttler) shareOf(h *Host, now int64) float64 {
	if !th.fresh(h, now) {
		return 1
	}
	requests, _, refused := th.sums(h, th.step(now))
	own := requests + refused
	all := h.fleet.requests + h.fleet.refused + h.unsent.requests + h.unsent.refused
	if own == 0 || all <= own {
		return 1
	}
	return float64(all) / float64(own)
}

// at returns the time of now, a time on th.clock, or the zero time for 0.
func (th *Throttler) at(now int64) time.Time {
	if now == 0 {
		return time.Time{}
	}
	return th.origin.Add(time.Duration(now))
}

// since returns t on th.clock, or 0 for the zero time or a time before
// th.origin.
func (th *Throttler) since(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return max(int64(t.Sub(th.origin)), 0)
}
