package pacing

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pacedAt20 returns a Pacer whose keyA is paced at the rate an announced
// bucket refilling at 20 a second allows.
func pacedAt20() *Pacer {
	p := newPacer()
	h := http.Header{
		"X-Ratelimit-Limit-Requests":     {"10"},
		"X-Ratelimit-Remaining-Requests": {"0"},
		"X-Ratelimit-Reset-Requests":     {"475ms"},
	}
	p.Observe(keyA, testNow, testNow, http.StatusOK, h)
	return p
}

// TestABacklogWaitsInOrder: turns beyond the horizon wait in the queue
// without a slot, each told its estimated wait; the head takes its slot
// when it comes within the horizon and wakes the one behind it, so that
// turns are sent in the order asked for, an interval apart.
func TestABacklogWaitsInOrder(t *testing.T) {
	p := pacedAt20()
	var turns []Turn
	var etas []time.Duration
	for range 20 {
		turn, eta, ok := p.Reserve(keyA, testNow, time.Minute)
		require.True(t, ok)
		turns = append(turns, turn)
		etas = append(etas, eta)
	}
	for i := 1; i < len(etas); i++ {
		assert.GreaterOrEqual(t, etas[i], etas[i-1], "estimates grow with the place in line")
	}
	queued := 0
	for _, turn := range turns {
		if turn.w != nil {
			queued++
		}
	}
	assert.Positive(t, queued, "turns beyond the horizon queue")

	// Run the callers as a Transport does: each asks when its nap ends or
	// when it is woken, and is sent when Wait says 0.
	now := testNow
	sent := make([]time.Time, len(turns))
	naps := make([]time.Time, len(turns))
	for i := range turns {
		naps[i] = now.Add(turns[i].Nap())
	}
	for done := 0; done < len(turns); {
		// The next caller to wake: the earliest nap, or one woken.
		next := -1
		for i := range turns {
			if !sent[i].IsZero() {
				continue
			}
			select {
			case <-turns[i].Woken():
				naps[i] = now
			default:
			}
			if next < 0 || naps[i].Before(naps[next]) {
				next = i
			}
		}
		now = maxTime(now, naps[next])
		if d := turns[next].Wait(now); d > 0 {
			naps[next] = now.Add(turns[next].Nap())
			continue
		}
		sent[next] = now
		done++
	}
	for i := 1; i < len(sent); i++ {
		assert.False(t, sent[i].Before(sent[i-1]), "turn %d sent before turn %d", i, i-1)
		if i > 1 {
			assert.GreaterOrEqual(t, sent[i].Sub(sent[i-1]), 40*time.Millisecond, "an interval apart at about 20 a second")
		}
	}
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// TestAQueuedTurnGivenBackLetsTheNextAdvance: a waiter that leaves the
// queue (its request gave up) is skipped, and the head leaving wakes the
// next.
func TestAQueuedTurnGivenBackLetsTheNextAdvance(t *testing.T) {
	p := pacedAt20()
	var turns []Turn
	for range 12 {
		turn, _, ok := p.Reserve(keyA, testNow, time.Minute)
		require.True(t, ok)
		turns = append(turns, turn)
	}
	var head, second int = -1, -1
	for i := range turns {
		if turns[i].w != nil {
			if head < 0 {
				head = i
			} else if second < 0 {
				second = i
			}
		}
	}
	require.True(t, head >= 0 && second >= 0, "two turns queued")
	assert.Nil(t, turns[head].Woken(), "the head wakes by its nap")
	woken := turns[second].Woken()
	require.NotNil(t, woken)
	turns[head].Release(testNow)
	select {
	case <-woken:
	default:
		t.Fatal("the next waiter was not woken when the head left")
	}
}

// TestAStoppedKeyWakesItsQueue: a key that stops being paced wakes every
// waiter, whose turn is then due at once.
func TestAStoppedKeyWakesItsQueue(t *testing.T) {
	p := pacedAt20()
	var last Turn
	for range 12 {
		last, _, _ = p.Reserve(keyA, testNow, time.Minute)
	}
	require.NotNil(t, last.w)
	woken := last.Woken()
	c := p.Observe(keyA, after(31*time.Second), after(31*time.Second), http.StatusOK, nil)
	require.Equal(t, Stopped, c.Event)
	select {
	case <-woken:
	default:
		t.Fatal("a waiter of a key no longer paced was not woken")
	}
	assert.Zero(t, last.Wait(after(31*time.Second)))
}

// TestCancelledTurnsAreGivenBack: 200 callers who took turns of a key paced
// at 5 a second, some with slots and the rest in the queue, all give them
// back (their requests were cancelled): the next caller's turn comes within
// one interval, as if they had never asked.
func TestCancelledTurnsAreGivenBack(t *testing.T) {
	for _, order := range []string{"in order", "last first"} {
		t.Run(order, func(t *testing.T) {
			p := newPacer()
			p.Observe(keyA, testNow, testNow, http.StatusOK, http.Header{
				"X-Ratelimit-Limit-Requests":     {"10"},
				"X-Ratelimit-Remaining-Requests": {"0"},
				"X-Ratelimit-Reset-Requests":     {"2s"},
			})
			var turns []Turn
			start := after(time.Millisecond)
			for range 200 {
				turn, _, ok := p.Reserve(keyA, start, time.Hour)
				require.True(t, ok)
				turns = append(turns, turn)
			}
			for i := range turns {
				if order == "last first" {
					i = len(turns) - 1 - i
				}
				turns[i].Release(start.Add(10 * time.Millisecond))
			}
			_, wait, ok := p.Reserve(keyA, start.Add(20*time.Millisecond), time.Hour)
			require.True(t, ok)
			assert.LessOrEqual(t, wait, 200*time.Millisecond, "the next turn, 5 a second")
		})
	}
}
