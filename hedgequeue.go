package retryhttp

import (
	"sync"
	"time"
)

// A hedgeQueue holds the calls to one host that wait for their first
// hedge, in the order they fall due, behind one timer, so that a call
// answered before its delay, nearly every one, only joins a list and
// leaves it: a timer of its own cost a reset and a stop, each under the
// runtime's timer lock with a read of the clock. The timer is reset only
// when a call falls due before it fires; one that fires with no call due
// is reset for the first that is, so that it fires at most once a delay
// while calls come and go.
type hedgeQueue struct {
	mu         sync.Mutex
	head, tail *hedgeCall
	timer      *time.Timer
	armed      time.Duration // when the timer fires, monotonic, if set
	set        bool
}

// add queues c, due at due (monotonic), at now.
func (q *hedgeQueue) add(c *hedgeCall, due, now time.Duration) {
	q.mu.Lock()
	c.due = due
	p := q.tail // nearly always the call due before c: delays change slowly
	for p != nil && p.due > due {
		p = p.prev
	}
	c.prev = p
	if p == nil {
		c.next, q.head = q.head, c
	} else {
		c.next, p.next = p.next, c
	}
	if c.next != nil {
		c.next.prev = c
	} else {
		q.tail = c
	}
	c.queued = true
	if !q.set || due < q.armed {
		q.armed, q.set = due, true
		if q.timer == nil {
			q.timer = time.AfterFunc(due-now, q.fire)
		} else {
			q.timer.Reset(due - now)
		}
	}
	q.mu.Unlock()
}

// remove takes c off the queue, unless the timer has taken it to hedge.
func (q *hedgeQueue) remove(c *hedgeCall) {
	q.mu.Lock()
	if c.queued {
		q.unlink(c)
	}
	q.mu.Unlock()
}

// unlink takes c off the queue; q.mu is held.
func (q *hedgeQueue) unlink(c *hedgeCall) {
	if c.prev != nil {
		c.prev.next = c.next
	} else {
		q.head = c.next
	}
	if c.next != nil {
		c.next.prev = c.prev
	} else {
		q.tail = c.prev
	}
	c.prev, c.next, c.queued = nil, nil, false
}

// fire takes the calls that are due off the queue, sets the timer for the
// next, and starts each call's first hedge on a goroutine of its own.
func (q *hedgeQueue) fire() {
	now := monotonic()
	var due []*hedgeCall
	q.mu.Lock()
	for c := q.head; c != nil && c.due <= now; c = q.head {
		q.unlink(c)
		due = append(due, c)
	}
	q.set = q.head != nil
	if q.set {
		q.armed = q.head.due
		q.timer.Reset(q.head.due - now)
	}
	q.mu.Unlock()
	for _, c := range due {
		go c.fire()
	}
}
