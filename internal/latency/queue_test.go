package latency

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHedgeQueueOrder checks that the queue keeps its calls in the order
// they fall due, whatever the order they join it (a host's delay changes
// as its latencies do), and that a call leaves it from anywhere.
func TestHedgeQueueOrder(t *testing.T) {
	var q Queue
	defer func() {
		if q.timer != nil {
			q.timer.Stop()
		}
	}()
	calls := map[time.Duration]*Waiter{}
	for _, due := range []time.Duration{50, 40, 60, 45, 60, 10, 70} {
		w := &Waiter{}
		calls[due] = w
		q.Add(w, nil, time.Hour+due, 1)
	}
	order := func() (dues []time.Duration) {
		var prev *Waiter
		for c := q.head; c != nil; c = c.next {
			require.Same(t, prev, c.prev, "the list's back links")
			dues = append(dues, c.due-time.Hour)
			prev = c
		}
		require.Same(t, prev, q.tail)
		return dues
	}
	assert.Equal(t, []time.Duration{10, 40, 45, 50, 60, 60, 70}, order())
	assert.Equal(t, time.Hour+10, q.armed, "the timer is set for the first due")
	q.Remove(calls[10])
	q.Remove(calls[50])
	q.Remove(calls[70])
	q.Remove(calls[70]) // twice: no effect
	assert.Equal(t, []time.Duration{40, 45, 60, 60}, order())
}
