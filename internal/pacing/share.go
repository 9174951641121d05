package pacing

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	public "github.com/retryhttp/retryhttp/pace"
)

// A Pacer whose pace is shared (pace.Shared) exchanges what it knows of
// the keys it paces with the other members of a public.Store, and learns
// from what they know:
//
//   - a throttle another member had cuts the key's rate here too, as one
//     of its own would (once a round, see growth.go);
//   - a Retry-After or a spent window another member met holds the key's
//     turns here too, within the Retry-After limit;
//   - the rate a quota allows, announced or declared, is the fleet's: this
//     member is paced at its share of it, what it asks of the key over what
//     the fleet asks (demand), plus an even part of a small floor so that a
//     member that starts asking is never paced at nothing.
//
// Exchanges run every shareEvery, and at once after a throttle of this
// member's, on a goroutine of the Pacer's own that runs while keys are
// paced or asked for turns, and for a lease after; each is cut after
// shareTimeout. No request waits for one. When exchanges fail, the shares
// of the last one hold for shareLease, then grow back to the whole, at
// most doubling a second (shareAt), so that the members never all take the
// whole quota at once.
const (
	shareEvery   = 20 * time.Millisecond
	shareTimeout = 50 * time.Millisecond
	shareLease   = 10 * time.Second
	// reportLease is how long the fleet counts a member's reports: a
	// member that stops asking is out of the split within it.
	reportLease = time.Second
	// demandFloor is the demand, in requests a second, every member is
	// counted as asking beyond its own in the split of a quota.
	demandFloor = 0.5
	// demandTau is the time over which a key's demand is smoothed: a
	// member asking a few turns a second asks none in most exchanges.
	demandTau = time.Second
	// maxFleetKeys bounds the keys taken from one exchange.
	maxFleetKeys = 4096
)

// sharing is a Pacer's link to its fleet.
type sharing struct {
	store    public.Store
	member   string
	now      func() time.Time
	panicked func(r any) // told the Store's first panic; nil: not told
	wake     chan struct{}

	running   atomic.Bool
	seen      atomic.Bool // a key was paced or asked since the loop last looked
	panicOnce atomic.Bool
}

// Shared makes p share its pace through store, reading the time from now,
// and telling panicked (when not nil) the first panic of the Store's
// Exchange.
func (p *Pacer) Shared(store public.Store, now func() time.Time, panicked func(r any)) {
	var id [8]byte
	rand.Read(id[:])
	p.sh = &sharing{store: store, member: hex.EncodeToString(id[:]), now: now, panicked: panicked, wake: make(chan struct{}, 1)}
}

// tick notes that a key is paced or asked for a turn, and starts the
// exchanges if they are not running.
func (s *sharing) tick(p *Pacer) {
	if s == nil {
		return
	}
	if !s.seen.Load() {
		s.seen.Store(true)
	}
	if !s.running.Load() && s.running.CompareAndSwap(false, true) {
		go s.run(p)
	}
}

// throttled asks for an exchange at once: a throttle of this member's is
// news for the others.
func (s *sharing) throttled(p *Pacer) {
	if s == nil {
		return
	}
	s.tick(p)
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// run exchanges every shareEvery, and at once when woken, until no key
// was asked for a turn or throttled for a lease: the fleet has forgotten
// this member's reports by then.
func (s *sharing) run(p *Pacer) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	last := s.now()
	for {
		select {
		case <-timer.C:
		case <-s.wake:
		}
		now := s.now()
		if s.seen.Swap(false) {
			last = now
		}
		if now.Sub(last) > shareLease {
			s.running.Store(false)
			// A tick that came after the look above starts another run.
			if !s.seen.Load() || !s.running.CompareAndSwap(false, true) {
				return
			}
		}
		s.exchange(p, now)
		timer.Reset(shareEvery)
	}
}

// exchange sends the reports of the keys p paces and merges the fleet's
// view it gets back; it reports whether the Store answered.
func (s *sharing) exchange(p *Pacer, now time.Time) bool {
	reports := p.reports(now)
	fleet, err := s.call(reports)
	if err != nil {
		return false
	}
	if len(fleet) > maxFleetKeys {
		fleet = fleet[:maxFleetKeys]
	}
	now = s.now()
	keys := make([]Key, len(fleet))
	for i, f := range fleet {
		k, ok := p.valid(f, now)
		if !ok {
			// A Store that returns what no member could have reported is
			// not believed at all: the exchange failed.
			return false
		}
		keys[i] = k
	}
	for i, f := range fleet {
		p.merge(keys[i], f, now)
	}
	return true
}

// Bounds on what a Store may return, beyond which its answer is garbage.
const (
	maxDemand  = 1e6 // requests a second
	maxMembers = 1 << 20
	maxSkew    = time.Minute // how far ahead of this member's clock a time may be
)

// valid returns the key of f, a Store's view of it, and reports whether f
// is what members could have reported at now.
func (p *Pacer) valid(f public.Report, now time.Time) (Key, bool) {
	k, ok := ParseKey(f.Key)
	switch {
	case !ok,
		!(f.Demand >= 0 && f.Demand <= maxDemand),
		f.Members < 1 || f.Members > maxMembers,
		!(f.Quota >= 0 && f.Quota < knownRate),
		f.Cut.After(now.Add(maxSkew)),
		f.Hold.After(now.Add(time.Duration(p.holdLimit) + maxSkew)):
		return Key{}, false
	}
	return k, true
}

// call runs the Store's Exchange within shareTimeout, a panic counting as
// an error.
func (s *sharing) call(reports []public.Report) (fleet []public.Report, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), shareTimeout)
	defer cancel()
	defer func() {
		if r := recover(); r != nil {
			if s.panicked != nil && s.panicOnce.CompareAndSwap(false, true) {
				s.panicked(r)
			}
			fleet, err = nil, fmt.Errorf("pace: Store panicked: %v", r)
		}
	}()
	return s.store.Exchange(ctx, s.member, reportLease, reports)
}

// reports returns what p knows at now of each key it paces.
func (p *Pacer) reports(now time.Time) []public.Report {
	out := make([]public.Report, 0, min(int(p.keys.n.Load()), maxFleetKeys))
	p.keys.each(func(k Key, st *state) bool {
		st.mu.Lock()
		n := st.ns(now)
		if st.paced && !st.gone && !st.expired(n) {
			out = append(out, st.report(k, n))
		}
		st.mu.Unlock()
		return len(out) < maxFleetKeys
	})
	return out
}

// report returns what the key k knows at n, and counts its demand.
func (st *state) report(k Key, n int64) public.Report {
	if st.askedAt > 0 && n > st.askedAt {
		dt := float64(n - st.askedAt)
		d := float64(st.asks) * 1e9 / dt
		st.demand += (1 - math.Exp(-dt/float64(demandTau))) * (d - st.demand)
	}
	st.asks, st.askedAt = 0, n
	r := public.Report{Key: k.String(), Demand: st.demand, Quota: st.fleetRate(n)}
	if st.lastCut > 0 {
		r.Cut = st.at(st.lastCut)
	}
	if st.sched.held > n {
		r.Hold = st.at(st.sched.held)
	}
	return r
}

// at returns the time n nanoseconds from the state's base.
func (st *state) at(n int64) time.Time { return st.base.Add(time.Duration(n)) }

// fleetRate returns, at n, the rate the key's quota allows the fleet:
// announced or declared; 0 when none is known.
func (st *state) fleetRate(n int64) float64 {
	r := math.Inf(1)
	if q, ok := st.quotaRate(n); ok {
		r = q
	}
	if st.policy > 0 {
		r = min(r, st.policy)
	}
	if st.declared > 0 {
		r = min(r, st.declared)
	}
	if math.IsInf(r, 1) {
		return 0
	}
	return r
}

// merge learns at now from f, the fleet's view of k, valid.
func (p *Pacer) merge(k Key, f public.Report, now time.Time) {
	st := p.lookup(k)
	if st == nil {
		// Another member's key: known here once the fleet throttled it
		// or held it within quiet.
		if !recent(f.Cut, now) && !(f.Hold.After(now)) {
			return
		}
		st = p.add(k, now)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.gone {
		return
	}
	n := st.ns(now)
	// This member's share of the key's quota.
	members := float64(f.Members)
	if st.shareAt == 0 {
		// Until now, this member took the whole quota for its own: the
		// throttles of what it sent so are the quota's to explain.
		st.quotaKnown(n, false)
	}
	st.share = min((st.demand+demandFloor)/(max(f.Demand, st.demand)+members*demandFloor), 1)
	st.shareAt = n
	if q := f.Quota; q > 0 {
		had := st.fleetQuota > 0 && n < st.fleetQuotaUntil
		if _, own := st.quotaRate(n); own {
			had = true
		}
		st.fleetQuota, st.fleetQuotaUntil = q, addSat(n, int64(shareLease))
		st.quotaKnown(n, had)
	}
	pressed := false
	if !f.Cut.IsZero() && recent(f.Cut, now) {
		c := min(st.ns(f.Cut), n)
		if c > st.lastCut && c > st.fleetCut {
			st.fleetCut = c
			pressed = true
			_, sending := st.sent.rate()
			if _, answered := st.quotaRate(n); (st.cut || sending) && !answered {
				// Cut as by a throttle of this member's, once a round;
				// unless the quota's own answers pace this member, whose
				// level shows what the others' throttles spent.
				st.throttled(n, c, n)
			}
		}
	}
	if f.Hold.After(now) {
		h := min(st.ns(f.Hold), addSat(n, min(p.holdLimit, int64(quiet))))
		if h > st.sched.held {
			st.sched.move(n, h, 0, 0, false)
			pressed = true
			st.pressure = max(st.pressure, h)
		}
	}
	if pressed {
		st.pressure = max(st.pressure, n)
		if !st.paced {
			st.paced = true
			st.pacedNow.Store(true)
			p.paced.Add(1)
		}
	}
}

// recent reports whether t is within quiet of now, or after it.
func recent(t, now time.Time) bool {
	return !t.IsZero() && now.Sub(t) <= time.Duration(quiet)
}

// shareAt returns the member's share of the key's quota at n: 1 alone, or
// the fleet's split while the last exchange is within the lease; past it,
// the share grows back to 1, at most doubling a second.
func (st *state) shareOf(n int64) float64 {
	if st.shareAt == 0 || st.share >= 1 {
		return 1
	}
	past := n - st.shareAt - int64(shareLease)
	if past <= 0 {
		return st.share
	}
	return min(st.share*math.Exp2(float64(past)/1e9), 1)
}
