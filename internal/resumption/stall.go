package resumption

import (
	"sync/atomic"
	"time"
)

// stallChecks is how many checks, a quarter of the stall timeout apart,
// must find one wait still under way before it counts as stalled: a wait is
// found stalled after at least the timeout and at most 1.25 times it.
const stallChecks = 4

// A StallWatch finds a wait for the server, within the caller's Read of a
// resumable body, that lasts longer than the stall timeout, with one timer
// per body and no goroutine: Read counts each wait's start and end (seq is
// odd while one lasts), which costs it two atomic additions, and the timer,
// every quarter of the timeout, checks whether the same wait is still
// under way. While no wait is under way the timer lapses, and the next wait
// sets it again, so that a body the caller no longer reads costs nothing.
//
// Start sets period and timer before the body's stall watch can run. The
// body's lock guards off, seen and count, and the timer's Stop; seq and
// armed are atomic, and armed decides who resets the timer: the wait that
// finds it lapsed, or the check that leaves it set.
type StallWatch struct {
	period time.Duration
	seq    atomic.Uint64 // incremented as a wait starts and as it ends
	armed  atomic.Bool   // the timer is set, or its function runs
	timer  *time.Timer   // nil: the body is not watched
	off    bool          // stopped for good (Off)
	seen   uint64        // seq at the last check
	count  int           // checks in a row that found the wait seen under way
}

// Start watches waits, calling check a quarter of timeout apart.
func (w *StallWatch) Start(timeout time.Duration, check func()) {
	w.period = max(timeout/stallChecks, 1)
	w.armed.Store(true)
	w.timer = time.AfterFunc(w.period, check)
}

// Enter marks the start of a wait for the server, and sets the timer if it
// had lapsed.
func (w *StallWatch) Enter() {
	if w.timer == nil {
		return
	}
	w.seq.Add(1)
	if !w.armed.Load() && w.armed.CompareAndSwap(false, true) {
		w.timer.Reset(w.period)
	}
}

// Leave marks the end of the wait.
func (w *StallWatch) Leave() {
	if w.timer != nil {
		w.seq.Add(1)
	}
}

// Check reports whether the wait under way has lasted for stallChecks
// checks: it has stalled.
func (w *StallWatch) Check() bool {
	s := w.seq.Load()
	if s&1 == 0 || s != w.seen {
		w.seen, w.count = s, 0
		return false
	}
	if w.count++; w.count < stallChecks {
		return false
	}
	w.count = 0
	return true
}

// Rearm sets the timer for the next check, unless no wait is under way:
// the timer then lapses, and the next wait's enter sets it. Its caller has
// found the watch not stopped.
func (w *StallWatch) Rearm() {
	if w.seq.Load()&1 == 0 {
		w.armed.Store(false)
		// A wait that began before the store saw the timer armed, and
		// did not set it: set it for that wait.
		if w.seq.Load()&1 == 0 || !w.armed.CompareAndSwap(false, true) {
			return
		}
	}
	w.timer.Reset(w.period)
}

// Stop stops the watch for good.
func (w *StallWatch) Stop() {
	w.off = true
	if w.timer != nil {
		w.timer.Stop()
	}
}

// Off reports whether the watch was stopped for good; the body's lock must
// be held, as for Stop.
func (w *StallWatch) Off() bool { return w.off }
