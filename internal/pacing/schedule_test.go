package pacing

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const ms = int64(time.Millisecond)

// at returns a pace of rate r everywhere.
func at(r float64) pace { return pace{max: r} }

type given struct {
	n, slot int64
	rate    float64
	gen     uint32
}

// giveTurns gives k turns at now, at rate r, with no limit.
func giveTurns(s *schedule, now int64, k int, r float64) []given {
	var gs []given
	for range k {
		n, slot, rate, ok := s.reserve(now, math.MaxInt64, at(r))
		if !ok {
			panic("refused")
		}
		gs = append(gs, given{n, slot, rate, s.gen})
	}
	return gs
}

func TestScheduleSpacesTurns(t *testing.T) {
	var s schedule
	gs := giveTurns(&s, 1000*ms, 3, 50)
	for i, g := range gs {
		assert.Equal(t, 1000*ms+int64(i)*20*ms, g.slot, "turn %d", i)
	}
	// Past the last slot, the next turn is due at once.
	_, slot, _, ok := s.reserve(2000*ms, 0, at(50))
	assert.True(t, ok)
	assert.Equal(t, 2000*ms, slot)
}

func TestScheduleRefusesPastTheLimit(t *testing.T) {
	var s schedule
	giveTurns(&s, 0, 5, 10) // 0, 100, ..., 400 ms; the next at 500 ms
	_, slot, _, ok := s.reserve(0, 499*ms, at(10))
	assert.False(t, ok, "a wait of 500ms, more than 499ms allowed")
	assert.Equal(t, 500*ms, slot, "the slot it would have had")
	_, slot, _, ok = s.reserve(0, 500*ms, at(10))
	assert.True(t, ok, "a wait of 500ms, as allowed")
	assert.Equal(t, 500*ms, slot)
}

func TestScheduleRelease(t *testing.T) {
	var s schedule
	gs := giveTurns(&s, 0, 3, 10) // 0, 100, 200 ms
	last := gs[2]
	s.release(50*ms, last.n, last.slot, last.gen)
	_, slot, _, _ := s.reserve(50*ms, math.MaxInt64, at(10))
	assert.Equal(t, last.slot, slot, "the last turn given back: the next takes its slot")

	mid := gs[1]
	s.release(50*ms, mid.n, mid.slot, mid.gen)
	_, slot, _, _ = s.reserve(50*ms, math.MaxInt64, at(10))
	assert.Equal(t, 300*ms, slot, "another turn given back: its slot left empty, no two turns a moment apart")
}

func TestScheduleHold(t *testing.T) {
	var s schedule
	gs := giveTurns(&s, 0, 3, 10) // 0, 100, 200 ms
	s.move(50*ms, 1000*ms, 0, 0, false)
	want := []int64{1000 * ms, 1050 * ms, 1150 * ms} // the due one to the end; the others keep their spacing after it
	for i, g := range gs {
		slot, _, ok := s.slot(g.n, g.slot, g.rate, g.gen)
		assert.True(t, ok)
		assert.Equal(t, want[i], slot, "turn %d after a hold to 1s", i)
	}
	_, slot, _, _ := s.reserve(60*ms, math.MaxInt64, at(10))
	assert.Equal(t, 1250*ms, slot, "a turn given after the hold")

	// A second hold, sooner than the first's end: nothing moves.
	s.move(70*ms, 900*ms, 0, 0, false)
	slot, _, _ = s.slot(gs[1].n, gs[1].slot, gs[1].rate, gs[1].gen)
	assert.Equal(t, 1050*ms, slot, "holds do not add up")
	// A later one moves them by what it adds.
	s.move(80*ms, 1500*ms, 0, 0, false)
	slot, _, _ = s.slot(gs[1].n, gs[1].slot, gs[1].rate, gs[1].gen)
	assert.Equal(t, 1550*ms, slot, "held 500ms more")
}

func TestScheduleCutThinsToThePlannedRate(t *testing.T) {
	var s schedule
	gs := giveTurns(&s, 0, 101, 100)[1:] // a second of turns to come at 100 a second
	const w = 40.0                       // a cut to beta*40 = 30 a second, growing back to 0.95*40
	s.move(0, 0, w, growFlat, false)
	var kept []int64
	lost := 0
	for _, g := range gs { // the turns ask in the order of their slots
		slot, rate, ok := s.slot(g.n, g.slot, g.rate, g.gen)
		if !ok {
			lost++
			continue
		}
		assert.Equal(t, g.slot, slot, "a turn kept keeps its slot")
		assert.LessOrEqual(t, rate, g.rate)
		kept = append(kept, slot)
	}
	require.NotEmpty(t, kept)
	assert.GreaterOrEqual(t, kept[0], interval(beta*w)/2, "the first kept half an interval after the cut")
	for i := 1; i < len(kept); i++ {
		assert.GreaterOrEqual(t, kept[i]-kept[i-1], interval(w)/2, "kept turns %d and %d no closer than half an interval", i-1, i)
	}
	// Over the second, the growth plans about 37 turns.
	assert.InDelta(t, 37, float64(len(kept)), 4, "turns kept")
	assert.Equal(t, 100, len(kept)+lost)

	// A turn lost takes a new one at the back.
	_, slot, _, _ := s.reserve(0, math.MaxInt64, at(30))
	assert.GreaterOrEqual(t, slot, gs[99].slot, "after the turns given before the cut")
}

func TestScheduleSteadyThinning(t *testing.T) {
	var s schedule
	gs := giveTurns(&s, 0, 1000, 100)
	s.move(0, 0, 60, 0, true) // a quota allowing 60 a second where turns were given at 100
	kept := 0
	for _, g := range gs {
		if _, _, ok := s.slot(g.n, g.slot, g.rate, g.gen); ok {
			kept++
		}
	}
	assert.InDelta(t, 600, kept, 2, "a share 60/100 kept, spread evenly")
}

func TestScheduleNeverBringsATurnForward(t *testing.T) {
	var s schedule
	gs := giveTurns(&s, 0, 50, 50)
	s.move(100*ms, 400*ms, 0, 0, false)
	s.move(200*ms, 200*ms, 20, 0, false)
	s.move(300*ms, 300*ms, 30, 0, true)
	for _, g := range gs {
		if slot, _, ok := s.slot(g.n, g.slot, g.rate, g.gen); ok {
			assert.GreaterOrEqual(t, slot, g.slot, "turn %d", g.n)
		}
	}
}

func TestAddSat(t *testing.T) {
	assert.Equal(t, int64(3), addSat(1, 2))
	assert.Equal(t, int64(math.MaxInt64), addSat(math.MaxInt64-1, 2))
	assert.Equal(t, int64(math.MaxInt64), addSat(math.MaxInt64, math.MaxInt64))
}

// TestScheduleARiseReachesTheNextTurn: a turn given at a slow rate does
// not hold the next one an interval of that rate away once the rate has
// risen; a rate that fell leaves the next slot where it was.
func TestScheduleARiseReachesTheNextTurn(t *testing.T) {
	var s schedule
	giveTurns(&s, 0, 1, 0.5) // the next slot 2 s away
	_, slot, _, _ := s.reserve(50*ms, math.MaxInt64, at(10))
	assert.Equal(t, 100*ms, slot, "an interval of the rate risen after the last slot")
	_, slot, _, _ = s.reserve(60*ms, math.MaxInt64, at(1))
	assert.Equal(t, 200*ms, slot, "spaced as given: a rate that fell moves nothing given")

	var held schedule
	giveTurns(&held, 0, 1, 0.5)
	held.move(10*ms, 1000*ms, 0, 0, false)
	_, slot, _, _ = held.reserve(20*ms, math.MaxInt64, at(10))
	assert.Equal(t, 1100*ms, slot, "after a hold, an interval after the last slot as held")
}
