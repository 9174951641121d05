package pacing

import "time"

// A key's turns are given slots at most horizon ahead. A request whose turn
// is further off waits in the key's queue, in the order it came, without a
// slot: the head of the queue takes the next slot once it is within the
// horizon, and wakes the waiter behind it. So the turns to come are spaced
// at the rate known when they come within the horizon, not when they were
// asked for: a rate that rises, or falls, reaches a backlog of any depth
// within the horizon.
const horizon = int64(250 * time.Millisecond)

// A waiter is a request in a key's queue.
type waiter struct {
	// ch is closed when the waiter becomes the head of the queue, or the
	// key stops being paced: its caller, asleep, asks again.
	ch     chan struct{}
	woken  bool  // ch is closed
	ticket int64 // its place in the order of the queue
	gone   bool  // left the queue: given a slot, or given back
}

// wake closes w's channel, once.
func (w *waiter) wake() {
	if !w.woken {
		w.woken = true
		close(w.ch)
	}
}

// A queue is a key's waiters, in order.
type queue struct {
	w       []*waiter // w[0] is the head, unless gone
	tickets int64     // the ticket of the next waiter
	waiting int       // waiters not gone
}

// head returns the first waiter not gone, dropping those before it, or nil.
func (q *queue) head() *waiter {
	for len(q.w) > 0 && q.w[0].gone {
		q.w[0] = nil
		q.w = q.w[1:]
	}
	if len(q.w) == 0 {
		q.w = nil // let the array go
		return nil
	}
	return q.w[0]
}

// join adds a waiter at the back and returns it, and reports whether it is
// the head. A head that joined as such is not woken: it sleeps until its
// slot comes within the horizon.
func (q *queue) join() (w *waiter, head bool) {
	w = &waiter{ch: make(chan struct{}), ticket: q.tickets}
	q.tickets++
	q.waiting++
	q.w = append(q.w, w)
	return w, q.head() == w
}

// leave takes w out of the queue, and wakes the new head if w was the
// head.
func (q *queue) leave(w *waiter) {
	if w.gone {
		return
	}
	wasHead := q.head() == w
	w.gone = true
	q.waiting--
	if h := q.head(); wasHead && h != nil {
		h.wake()
	}
}

// ahead returns how many waiters are ahead of w, at most: those gone from
// the middle of the queue are counted.
func (q *queue) ahead(w *waiter) int64 {
	h := q.head()
	if h == nil {
		return 0
	}
	return w.ticket - h.ticket
}

// wakeAll wakes every waiter and empties the queue.
func (q *queue) wakeAll() {
	for _, w := range q.w {
		if !w.gone {
			w.gone = true
			w.wake()
		}
	}
	*q = queue{tickets: q.tickets}
}
