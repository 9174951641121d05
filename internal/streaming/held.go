// Package streaming holds a response that is an event stream for its
// first event, so that the Transport's classifiers can judge the stream
// by it, and gives the caller the stream byte for byte all the same.
//
// It is given the body of a response and a wait; it decides nothing: it
// reads the body until its first event on a goroutine of its own, so that
// the wait is bounded without cutting the body, and keeps what it read
// for the reader of the body. It never reads past the Read that completes
// the first event, and never closes the body but on Close.
package streaming

import (
	"errors"
	"io"
	"sync"
	"time"

	"github.com/retryhttp/retryhttp/internal/eventstream"
)

// A Held is the body of an event stream held for its first event: it gives
// its reader the bytes read for the first event, then the rest of the body,
// as the body delivers them, errors included.
type Held struct {
	src  io.ReadCloser
	done chan struct{} // closed once the first event is read, or the read failed

	// Set before done is closed.
	raw []byte
	ev  eventstream.Event
	ok  bool
	err error

	off       int // bytes of raw the reader has had; reader only
	closeOnce sync.Once
	closeErr  error
}

// Hold starts reading body for its first event, within the bounds of lim.
func Hold(body io.ReadCloser, lim eventstream.Limits) *Held {
	h := &Held{src: body, done: make(chan struct{})}
	go h.readFirst(lim)
	return h
}

func (h *Held) readFirst(lim eventstream.Limits) {
	defer close(h.done)
	h.raw, h.ev, h.ok, h.err = eventstream.ReadFirst(h.src, lim)
}

// timers holds the stopped timers of waits for a first event.
var timers sync.Pool

// Wait waits for the first event, at most d or until cancel is closed, and
// reports whether the read for it ended: with an event (First), or with
// the body's failure or end (Err).
func (h *Held) Wait(d time.Duration, cancel <-chan struct{}) bool {
	select {
	case <-h.done:
		return true
	default:
	}
	if d <= 0 {
		return false
	}
	timer, _ := timers.Get().(*time.Timer)
	if timer == nil {
		timer = time.NewTimer(d)
	} else {
		timer.Reset(d)
	}
	defer func() {
		timer.Stop() // which, since Go 1.23, also drains its channel
		timers.Put(timer)
	}()
	select {
	case <-h.done:
		return true
	case <-timer.C:
	case <-cancel:
	}
	return false
}

// First returns the first event, and reports false when the read for it
// has not ended, or ended without one.
func (h *Held) First() (eventstream.Event, bool) {
	select {
	case <-h.done:
		return h.ev, h.ok
	default:
		return eventstream.Event{}, false
	}
}

// Failed returns the failure of the body that ended the read for the
// first event before one came, once the read ended: an error other than
// the body's end (io.EOF) or a limit, which leaves the rest of the body to
// its reader. Nil otherwise.
func (h *Held) Failed() error {
	select {
	case <-h.done:
	default:
		return nil
	}
	if h.ok || h.err == nil || h.err == io.EOF || tooLong(h.err) {
		return nil
	}
	return h.err
}

// tooLong reports whether err is that of a line or an event over its
// limit.
func tooLong(err error) bool { return errors.Is(err, eventstream.ErrTooLong) }

// Read gives the bytes read for the first event, then reads the body.
func (h *Held) Read(p []byte) (int, error) {
	<-h.done
	if h.off < len(h.raw) {
		n := copy(p, h.raw[h.off:])
		h.off += n
		return n, nil
	}
	if h.err != nil && !tooLong(h.err) {
		return 0, h.err
	}
	return h.src.Read(p)
}

// Close closes the body, once, which ends a read for the first event still
// waiting on it.
func (h *Held) Close() error {
	h.closeOnce.Do(func() { h.closeErr = h.src.Close() })
	return h.closeErr
}
