package latency

import (
	"sync"
	"time"
)

// A Hedger is a call waiting for its first hedge.
type Hedger interface {
	// Hedge starts the call's first hedge. The queue calls it on a
	// goroutine of its own once the call falls due.
	Hedge()
}

// A Waiter is a call's place on its host's Queue. The call holds it, so
// that waiting costs no allocation; its fields belong to the queue, under
// the queue's lock.
type Waiter struct {
	due        time.Duration
	prev, next *Waiter
	queued     bool
	h          Hedger
}

// A Queue holds the calls to one host that wait for their first hedge, in
// the order they fall due, behind one timer, so that a call answered
// before its delay, nearly every one, only joins a list and leaves it: a
// timer of its own cost a reset and a stop, each under the runtime's timer
// lock with a read of the clock. The timer is reset only when a call falls
// due before it fires; one that fires with no call due is reset for the
// first that is, so that it fires at most once a delay while calls come
// and go.
type Queue struct {
	mu         sync.Mutex
	head, tail *Waiter
	timer      *time.Timer
	armed      time.Duration // when the timer fires, monotonic, if set
	set        bool
}

// Add queues w, the place of the call h, due at due (monotonic), at now.
func (q *Queue) Add(w *Waiter, h Hedger, due, now time.Duration) {
	q.mu.Lock()
	w.due, w.h = due, h
	p := q.tail // nearly always the call due before w: delays change slowly
	for p != nil && p.due > due {
		p = p.prev
	}
	w.prev = p
	if p == nil {
		w.next, q.head = q.head, w
	} else {
		w.next, p.next = p.next, w
	}
	if w.next != nil {
		w.next.prev = w
	} else {
		q.tail = w
	}
	w.queued = true
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

// Remove takes w off the queue, unless the timer has taken it to hedge.
func (q *Queue) Remove(w *Waiter) {
	q.mu.Lock()
	if w.queued {
		q.unlink(w)
	}
	q.mu.Unlock()
}

// unlink takes w off the queue; q.mu is held.
func (q *Queue) unlink(w *Waiter) {
	if w.prev != nil {
		w.prev.next = w.next
	} else {
		q.head = w.next
	}
	if w.next != nil {
		w.next.prev = w.prev
	} else {
		q.tail = w.prev
	}
	w.prev, w.next, w.queued = nil, nil, false
}

// fire takes the calls that are due off the queue, sets the timer for the
// next, and starts each call's first hedge on a goroutine of its own.
func (q *Queue) fire() {
	now := Monotonic()
	var due []Hedger
	q.mu.Lock()
	for w := q.head; w != nil && w.due <= now; w = q.head {
		q.unlink(w)
		due = append(due, w.h)
		w.h = nil
	}
	q.set = q.head != nil
	if q.set {
		q.armed = q.head.due
		q.timer.Reset(q.head.due - now)
	}
	q.mu.Unlock()
	for _, h := range due {
		go h.Hedge()
	}
}
