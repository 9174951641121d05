package pacing

import "math"

// A schedule gives a key's requests their turns: numbered slots in the
// order they were asked for, each an interval after the one before, as a
// GCRA gives them. A turn given is a caller asleep until its slot, who asks
// again when it wakes: so a turn may be put off, never brought forward,
// and a faster rate spaces only the turns given from then on, the next of
// them an interval of it after the last given, however slow the rate that
// one was given at.
//
// A cut (a throttle) thins the turns still to come, so that the rate drops
// at once: those that follow the slower rate keep their slots, and the
// others lose theirs and take new ones at the back when they next ask.
// Stretching every turn instead would put nearly every one past the wait
// it was allowed, when the schedule runs that far ahead, and leave a gap.
// A Retry-After or a spent quota holds every turn, due or to come, until
// it ends, those to come keeping their spacing after it. The last
// movesKept cuts and holds are remembered, for the turns that ask again.
// Times are nanoseconds from the key's base.
type schedule struct {
	n    int64 // the number of the next turn given
	next int64 // the first slot not given
	// last is the slot of the last turn given, and lastAt the time it
	// was given: the next turn's slot follows it by the rate known when
	// it is given, when that is faster than the rate next was spaced by.
	last, lastAt int64
	held         int64 // no slot before this
	// fastest is the fastest rate a turn was given at since the last
	// thinning.
	fastest float64
	gen     uint32
	moves   [movesKept]move
}

// movesKept is how many moves of a schedule a turn can learn of: one
// asleep through more learns of the last ones only.
const movesKept = 8

// A move changes at c the turns still to come: when wMax > 0, a turn given
// a slot in (c, end] at a rate faster than the rate the move plans for it
// is thinned (see keep), and counted at the planned rate from then on if
// it keeps its slot; then, when u > c, every slot is shifted by u-c, those
// due to u. No slot is before held.
type move struct {
	gen    uint32
	c, u   int64
	end    int64
	wMax   float64
	flat   float64
	steady bool  // wMax is the rate planned for every slot
	next   int64 // a cut's next slot to keep, by its GCRA
	held   int64
}

// planned returns the rate the cut m plans for slot s: the growth after
// it, but at most twice the rate it cut to, as a turn is given; or wMax,
// when steady.
func (m move) planned(s int64) float64 {
	if m.steady {
		return m.wMax
	}
	return m.wMax * min(growth(float64(s-m.c)/1e9, m.flat), 2*beta)
}

// keep reports whether turn n, given slot at at rate r, keeps it after
// the move m. After a cut, the turns to come keep their slots only as far
// as they follow the rate the cut plans, as a GCRA admits them: in the
// order they ask (the order of their slots, as they wake), a turn keeps
// its slot if it is no sooner than an interval after the last kept, less
// half an interval, the first no sooner than half an interval after the
// cut, when the server, run dry, has taken one more; the others lose
// theirs. A turn kept is not moved: the turns to come are asleep until
// their slots, allowed to wait no longer than they were told. A steady
// move, a quota allowing less, thins the turns by number.
func (m *move) keep(n, at int64, r float64) bool {
	p := m.planned(at)
	if p >= r {
		return true
	}
	if m.steady {
		return !thinned(n, m.gen, 1-p/r)
	}
	iv := interval(p)
	if m.next == 0 {
		m.next = m.c + iv
	}
	if at < m.next-iv/2 {
		return false
	}
	m.next = max(m.next, at) + iv
	return true
}

// thinned reports whether turn n loses its slot to the move gen that thins
// a share p of the turns, steadily: n*phi, shifted by the move, falls in
// [0, p) modulo 1, a share p of any run of numbers, spread evenly, and
// another share at each move.
func thinned(n int64, gen uint32, p float64) bool {
	const phi, shift = 0.6180339887498949, 0.7548776662466927
	x := float64(n)*phi + float64(gen)*shift
	return x-math.Floor(x) < p
}

// reserve returns the number and slot of the next turn at now, and reports
// false when the wait for it would exceed limit; when it does not, the turn
// is given, and the next is spaced after it at the rate of pace at the
// slot, which it returns too.
func (s *schedule) reserve(now, limit int64, pace pace) (n, slot int64, rate float64, ok bool) {
	s.next = s.front(now, pace)
	slot = max(now, s.next, s.held)
	if slot-now > limit {
		return 0, slot, 0, false
	}
	n = s.n
	s.n++
	rate = pace.at(slot)
	s.last, s.lastAt = slot, now
	s.next = addSat(slot, interval(rate))
	s.fastest = max(s.fastest, rate)
	return n, slot, rate, true
}

// front returns, at now, the first slot not given: an interval after the
// last given at the rate of pace when that is sooner than the slot spaced
// by the rate known when it was given, so that a rate that rose reaches
// the next turn, however slow the rate the last was given at.
func (s *schedule) front(now int64, pace pace) int64 {
	if s.n == 0 || now <= s.lastAt {
		return s.next
	}
	return min(s.next, addSat(s.last, interval(pace.at(max(now, s.last)))))
}

// release gives back at now turn n, given slot at in generation gen, not
// used. When it is the last turn given, the next takes its slot. Another
// turn's slot is left empty: giving it to the next turn given, or bringing
// the next slot forward, would put two turns a moment apart.
func (s *schedule) release(now, n, at int64, gen uint32) {
	if n == s.n-1 && gen == s.gen {
		s.next = max(at, now, s.held)
	}
}

// move thins at now the turns still to come to the rate a cut to wMax
// (when positive) plans for them, and holds every turn, due or to come,
// until until.
func (s *schedule) move(now, until int64, wMax, flat float64, steady bool) {
	c := max(now, s.held) // slots before a hold in force are at it
	m := move{c: c, u: max(until, c), end: s.next}
	if wMax > 0 && s.next > c {
		m.wMax, m.flat, m.steady = wMax, flat, steady
	}
	if m.wMax == 0 && m.u == c {
		return // nothing given moves
	}
	s.held = max(s.held, until)
	m.held = s.held
	if m.wMax > 0 {
		s.fastest = 0
	}
	if m.u > c {
		s.next = addSat(max(s.next, c), m.u-c)
		if s.n > 0 {
			s.last = max(addSat(max(s.last, c), m.u-c), s.held)
		}
	}
	s.gen++
	m.gen = s.gen
	s.moves[s.gen%movesKept] = m
}

// slot returns where turn n, given slot at at rate rate in generation gen,
// is now, and at what rate, and reports false when a cut since took it.
// A turn asks once a move: it then holds the slot and rate returned, as
// of the schedule's generation.
func (s *schedule) slot(n, at int64, rate float64, gen uint32) (int64, float64, bool) {
	since := s.gen - gen // moves since, modulo 2^32
	if since > movesKept {
		since = movesKept
	}
	for g := s.gen - since + 1; since > 0; g, since = g+1, since-1 {
		m := &s.moves[g%movesKept]
		if m.gen != g {
			continue
		}
		if m.wMax > 0 && at > m.c && at <= m.end {
			if !m.keep(n, at, rate) {
				return 0, 0, false
			}
			rate = min(rate, m.planned(at))
		}
		if m.u > m.c {
			at = addSat(max(at, m.c), m.u-m.c)
		}
		at = max(at, m.held)
	}
	return at, rate, true
}

// addSat returns a+b, b >= 0, saturating at math.MaxInt64.
func addSat(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
