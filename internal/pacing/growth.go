package pacing

import (
	"math"
	"time"
)

// The rate of a key whose server announces no quota is learned from its
// throttles, much as TCP CUBIC learns a path's. A throttle cuts the rate
// to beta of wMax, the rate the server takes, which the key remembers;
// without throttles the rate grows back, t seconds after the cut:
//
//	top - (top-beta)*(1-t/growK)^3    t < growK                    fast, then flatter
//	top                               t < growK+growFlat           flat, top = 1-margin
//	top + growC*(t-growK-growFlat)^3  after                        probing, faster and faster
//
// times wMax; growFlat is the plateau at 50 a second and more, longer
// below so that a cycle spans about 100 requests, at most 5 s (plateau).
// The plateau is a little below wMax, so that a server that
// takes wMax saves a few requests for the probe to spend, and a jitter of
// arrivals does not find it dry. The curve is relative to wMax, so the times
// are the same at any rate: 0.95 wMax 0.5 s after a cut, wMax 1.92 s after
// it, twice wMax 2.22 s after it. The AWS SDK's adaptive mode (CUBIC with
// beta 0.7 and C 0.4 in requests a second) regains 50/s 3.35 s after a cut
// and doubles it 8.35 s after, and takes longer the faster the rate.
//
// wMax is estimated at each cut from what the server took. A server that
// throttles when a bucket runs dry had it dry at the cut before and has it
// dry again: over the cycle between, it took as many requests as it
// refilled, and the requests it accepted over the cycle's time are its
// rate. A throttle of a request sent above wMax, the plateau below it having
// held, moves wMax toward that rate, down by drift at most, and up to gamma
// of the rate the key was sent at (a cycle spent below a quota that rose
// does not show it); a throttle at or below wMax sets wMax to it. The first
// cut takes the rate the key was sent at, measured; a cycle too short to
// tell, what it took, but at least beta² of wMax, so that a key sent far
// above the host's rate comes down to it in a few cuts. A wMax that moved
// by more than confirm has no plateau: the curve probes at once, to find a
// quota that changed. A cycle of few requests tells its rate less
// closely, to 1/√accepted: within that, wMax counts as confirmed, and
// rises by drift at most, since below 25 a second a probe's overshoot
// alone, before its throttle is answered, would read as a rise.
//
// Only a throttle of a request sent after the round of the last cut cuts
// again, once a round trip, as in TCP: the round lasts roundAfter intervals
// after the cut, since the server, run dry, also throttles the turns
// already close behind.
const (
	beta     = 0.75
	margin   = 0.05
	growK    = 0.5  // seconds
	growFlat = 1.25 // seconds
	growC    = 10.0 // per second cubed

	gamma   = 0.9
	drift   = 0.03
	confirm = 0.1

	// A cycle says what the server took when it lasts minCycle and the
	// server accepted minAccepted requests over it.
	minCycle    = int64(100 * time.Millisecond)
	minAccepted = 10

	roundAfter = 2

	// maxRate bounds every rate, in requests a second: a rate from a
	// peer's numbers is clamped to it.
	maxRate = 1e9
	// minRate bounds every rate from below: a request an hour.
	minRate = 1.0 / 3600
)

// A cycle's probe costs about one throttle, so that a cycle of a rate
// confirmed spans at least cycleRequests requests, the throttles a
// hundredth of them, but lasts no longer than cycleLongest, one throttle
// in that time at rates too low for a hundredth: its plateau is longer at
// low rates (plateau). probeAt is how long after the plateau the rate is
// back at wMax: (margin/growC)^(1/3) seconds.
const (
	cycleRequests = 100
	cycleLongest  = 5.0 // seconds
	probeAt       = 0.171
)

// plateau returns the plateau of a cycle after a cut to w confirmed: at
// least growFlat, and long enough for the cycle to span cycleRequests
// requests, or cycleLongest.
func plateau(w float64) float64 {
	return max(growFlat, min(cycleRequests/w, cycleLongest)-growK-probeAt)
}

// growth returns the rate t seconds after a cut, as a share of wMax, with
// a plateau of flat seconds.
func growth(t, flat float64) float64 {
	const top = 1 - margin
	switch {
	case t < 0:
		return beta
	case t < growK:
		x := 1 - t/growK
		return top - (top-beta)*x*x*x
	case t < growK+flat:
		return top
	}
	x := min(t-growK-flat, 1e3) // past a thousand seconds it is maxRate anyway
	return top + growC*x*x*x
}

// learned returns the rate learned from throttles at n, and reports false
// when the key has had none since it was paced.
func (st *state) learned(n int64) (float64, bool) {
	if !st.cut {
		return 0, false
	}
	return clampRate(st.wMax * growth(float64(n-st.cutAt)/1e9, st.flat)), true
}

// throttled learns at n from the throttle of a request sent at sent: it
// cuts the rate, unless the request was sent in the round of the last cut
// or before the quota it is paced by was known (quotaExplains),
// thins the turns still to come to the rate cut to, and holds every turn
// until until (n when the throttle asked for no delay).
func (st *state) throttled(n, sent, until int64) {
	if st.cut && sent < st.roundEnd || st.quotaExplains(n, sent) {
		st.sched.move(n, until, 0, 0, false)
		return
	}
	from := st.rate(n)
	if m, ok := st.sent.rate(); ok {
		from = min(from, m)
	}
	w, tol := from, confirm
	if st.accepted > 0 {
		// A member of a fleet accepted its share of the fleet's cycle.
		tol = max(confirm, math.Sqrt(st.shareOf(n)/float64(st.accepted)))
	}
	if st.cut && sent-st.cycleStart >= minCycle && st.accepted >= st.minAccepted() {
		took := float64(st.accepted) * 1e9 / float64(sent-st.cycleStart)
		if l, _ := st.learned(sent); l > st.wMax {
			w = max(st.wMax*(1-drift), min(from, max(gamma*from, took)))
			if tol > confirm && w < st.wMax*(1+tol) {
				w = min(w, st.wMax*(1+drift))
			}
		} else {
			w = min(from, took)
		}
	} else if st.cut && sent > st.cycleStart {
		took := float64(st.accepted) * 1e9 / float64(sent-st.cycleStart)
		w = min(from, max(took, beta*beta*st.wMax))
	}
	w = clampRate(w)
	st.flat = 0
	if st.cut && w > st.wMax*(1-tol) && w < st.wMax*(1+tol) {
		st.flat = plateau(w)
	}
	if st.shareAt != 0 && st.cut {
		// A member of a fleet: its rate is a part of the fleet's, too
		// small to tell a cut confirmed, and every member's cut is the
		// fleet's. The fleet's cycle is one cycle's.
		st.flat = plateau(w / max(st.share, 1e-3))
	}
	st.cut, st.cutAt, st.wMax = true, n, w
	st.cycleStart, st.accepted = sent, 0
	st.roundEnd = addSat(n, roundAfter*interval(st.rate(n)))
	st.sched.move(n, until, w, st.flat, false)
}

// minAccepted returns how many requests the server must have accepted
// over a cycle for the cycle to tell what it took: minAccepted, or for a
// member of a fleet its share of them, at least one, since the fleet's
// cuts are every member's and the fleet's cycle holds minAccepted.
func (st *state) minAccepted() int {
	if st.shareAt == 0 {
		return minAccepted
	}
	return max(1, int(math.Ceil(minAccepted*st.share)))
}

// interval returns the time between two slots at rate r, in nanoseconds;
// 0 for an unbounded rate.
func interval(r float64) int64 {
	if math.IsInf(r, 1) {
		return 0
	}
	return int64(1e9 / clampRate(r))
}

// clampRate bounds r to [minRate, maxRate]; NaN is minRate.
func clampRate(r float64) float64 {
	if !(r >= minRate) {
		return minRate
	}
	return min(r, maxRate)
}
