package eventstream

import (
	"bytes"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// ErrClosed is the error of a Read after Close.
var ErrClosed = errors.New("eventstream: read after Close")

// Progress is what a Reader has delivered to its caller.
type Progress struct {
	// Bytes is the number of bytes Read has returned.
	Bytes int64
	// Events is the number of events dispatched by those bytes.
	Events int64
	// LastID is the last event ID as of the end of those bytes: what a
	// reconnection sends as Last-Event-ID. Empty means that none was set.
	LastID string
	// Retry is the reconnection time of the last valid retry field read
	// from the stream, when HasRetry.
	Retry    time.Duration
	HasRetry bool
	// Resumes is the number of bodies the Reader has continued from.
	Resumes int
	// Passthrough reports that a line or an event over its limit made
	// the Reader stop parsing: it passes the body's bytes on as they
	// come, and no longer resumes. Events and LastID stop there.
	Passthrough bool
}

// A Cut is what a Reader knows when the body it reads ends.
type Cut struct {
	Progress
	// Err is what the body's Read returned: io.EOF when the body ended
	// cleanly (inside an event if Held is not zero), any other error when
	// it failed.
	Err error
	// Held is the number of bytes of an unfinished event the Reader held
	// back from its caller. A body that continues the stream replaces
	// them.
	Held int
}

// A Reconnect continues a stream after its body ended; the Reader has
// closed that body. It returns a body that continues the stream after the
// event whose id is cut.LastID (the caller sends it as Last-Event-ID), or
// an error, which the Reader returns from Read from then on; it may return
// io.EOF to end the stream cleanly, as when cut.Err is io.EOF and the
// stream is complete. It runs on the goroutine that called Read, within
// that Read.
type Reconnect func(cut Cut) (io.ReadCloser, error)

// A Reader is the body of an event stream that can be resumed. It passes
// on the bytes of its body up to the end of the last whole event, so that
// a body cut in the middle of an event never gives its caller part of it;
// when the body ends, it calls its Reconnect for a body that continues the
// stream, drops the part of an event it held, and reads on from the new
// body, within the caller's Read.
//
// It calls Reconnect only when an event ID has been delivered: a stream
// without one cannot be continued without repeating it, and its body's
// error (io.EOF included) is returned as it is. Nor does it once a line or
// an event over its limit has made it pass the rest of the body through
// as it comes (Progress.Passthrough), its caller then having part of an
// event.
//
// The part of an event held back at the end is given to the caller when
// the stream ends with io.EOF, so that a stream that ends as it is sent
// reaches the caller byte for byte, and dropped when it ends with any
// other error.
//
// Read, Progress and the Reconnect belong to one goroutine; Close may be
// called from any, at any time, and closes the body being read.
type Reader struct {
	reconnect Reconnect
	p         Parser
	limit     int // most bytes of buf: one past the Event limit

	// buf[:out] is delivered; buf[out:ready] is released; buf[ready:parsed]
	// is parsed, waiting for its boundary; buf[parsed:] is not parsed yet.
	buf                []byte
	out, ready, parsed int
	readyEvents        int64  // events that end in buf[out:ready]
	readyID            string // last event ID at ready
	prog               Progress
	bodyErr            error // from the body, once buf is parsed
	err                error // what Read returns from now on
	checkBOM           bool  // a new body may start with a byte order mark
	empty              int   // reads in a row without a byte
	mu                 sync.Mutex
	cur                io.ReadCloser // under mu; nil between bodies and after Close
	closed             atomic.Bool   // set under mu
}

// NewReader returns a Reader of body, which reconnect continues; a nil
// reconnect never continues it.
func NewReader(body io.ReadCloser, lim Limits, reconnect Reconnect) *Reader {
	r := new(Reader)
	r.Init(body, lim, reconnect)
	return r
}

// Init makes r, a zero Reader, a Reader of body as NewReader does, for a
// Reader that is a field of another value.
func (r *Reader) Init(body io.ReadCloser, lim Limits, reconnect Reconnect) {
	lim = lim.resolved()
	r.reconnect, r.limit, r.cur = reconnect, lim.Event+1, body
	r.p.lim, r.p.discardData = lim, true
}

// Progress returns what the Reader has delivered so far.
func (r *Reader) Progress() Progress { return r.prog }

// Read reads the stream, as io.Reader does.
func (r *Reader) Read(b []byte) (int, error) {
	if r.closed.Load() {
		return 0, ErrClosed
	}
	if len(b) == 0 {
		return 0, nil
	}
	if r.prog.Passthrough {
		return r.readThrough(b)
	}
	for r.out == r.ready {
		if r.err != nil {
			return 0, r.err
		}
		r.advance()
	}
	// Release, with what is ready, the whole events already read that fit
	// in b, so that each Read returns as many as it can.
	for !r.prog.Passthrough && !r.checkBOM && r.ready-r.out < len(b) {
		to := min(len(r.buf), r.out+len(b))
		if to <= r.parsed || !r.parse(to) {
			break
		}
	}
	n := copy(b, r.buf[r.out:r.ready])
	r.out += n
	r.prog.Bytes += int64(n)
	if r.out == r.ready {
		r.prog.Events += r.readyEvents
		r.prog.LastID, r.readyEvents = r.readyID, 0
		if r.out == len(r.buf) {
			r.buf, r.out, r.ready, r.parsed = r.buf[:0], 0, 0, 0
		}
	}
	return n, nil
}

// advance makes progress towards the next release: it parses what was
// read, reads more, or deals with the end of the body.
func (r *Reader) advance() {
	switch {
	case r.parsed < len(r.buf) && !r.checkBOM:
		r.parse(len(r.buf))
	case r.bodyErr != nil:
		r.end()
	default:
		r.fill()
	}
}

// parse parses buf[parsed:to] up to its first boundary, and reports
// whether it found one. An event over the limit makes the Reader pass
// everything through.
func (r *Reader) parse(to int) bool {
	n, s, err := r.p.Next(r.buf[r.parsed:to])
	r.parsed += n
	r.prog.Retry, r.prog.HasRetry = r.p.Retry()
	switch {
	case err != nil:
		r.prog.Passthrough, r.ready = true, len(r.buf)
		return false
	case s == More:
		return false
	case s == Dispatch:
		r.readyEvents++
	}
	r.ready, r.readyID = r.parsed, r.p.LastID()
	return true
}

// fill reads from the body into buf, after what it holds.
func (r *Reader) fill() {
	if r.out > 0 {
		k := copy(r.buf, r.buf[r.out:])
		r.buf = r.buf[:k]
		r.ready -= r.out
		r.parsed -= r.out
		r.out = 0
	}
	if len(r.buf) == cap(r.buf) {
		grown := make([]byte, len(r.buf), min(max(2*cap(r.buf), 4<<10), r.limit))
		copy(grown, r.buf)
		r.buf = grown
	}
	r.mu.Lock()
	body := r.cur
	r.mu.Unlock()
	if body == nil {
		r.err = ErrClosed
		return
	}
	n, err := body.Read(r.buf[len(r.buf):cap(r.buf)])
	r.buf = r.buf[:len(r.buf)+n]
	switch {
	case err != nil:
		r.bodyErr = err
	case n > 0:
		r.empty = 0
	default:
		if r.empty++; r.empty >= 100 {
			r.bodyErr = io.ErrNoProgress
		}
	}
	if r.checkBOM && (len(r.buf) >= len(bom) || r.bodyErr != nil || !bytes.HasPrefix([]byte(bom), r.buf)) {
		r.checkBOM = false
		if bytes.HasPrefix(r.buf, []byte(bom)) {
			r.buf = r.buf[:copy(r.buf, r.buf[len(bom):])]
		}
	}
}

// end deals with the end of the body: it continues the stream with
// another, or ends it.
func (r *Reader) end() {
	cut := Cut{Progress: r.prog, Err: r.bodyErr, Held: len(r.buf) - r.ready}
	if cut.Held > 0 && r.p.crEnd && r.buf[r.ready] == '\n' {
		cut.Held-- // the LF of the CRLF that ended the last event
	}
	r.bodyErr = nil
	r.mu.Lock()
	old := r.cur
	r.cur = nil
	r.mu.Unlock()
	if old != nil {
		_ = old.Close() // it has ended: its Close error tells nothing more
	}
	if r.closed.Load() {
		r.err = ErrClosed
		return
	}
	if r.reconnect == nil || r.prog.LastID == "" {
		r.finish(cut.Err)
		return
	}
	body, err := r.reconnect(cut)
	if err != nil || body == nil {
		if body != nil {
			_ = body.Close()
		}
		if err == nil {
			err = cut.Err
		}
		r.finish(err)
		return
	}
	r.mu.Lock()
	if r.closed.Load() {
		r.mu.Unlock()
		_ = body.Close()
		r.err = ErrClosed
		return
	}
	r.cur = body
	r.mu.Unlock()
	r.prog.Resumes++
	r.buf, r.out, r.ready, r.parsed = r.buf[:0], 0, 0, 0
	r.p.restart()
	r.checkBOM, r.empty = true, 0
}

// finish ends the stream with err: the part of an event held is released
// if err is io.EOF, dropped otherwise.
func (r *Reader) finish(err error) {
	r.err = err
	if err == io.EOF {
		r.ready, r.parsed = len(r.buf), len(r.buf)
		r.readyID = r.prog.LastID
		return
	}
	r.buf, r.parsed = r.buf[:r.ready], r.ready
}

// readThrough reads once the Reader passes the body through: what buf
// holds, then the body.
func (r *Reader) readThrough(b []byte) (int, error) {
	if r.out < len(r.buf) {
		n := copy(b, r.buf[r.out:])
		r.out += n
		r.prog.Bytes += int64(n)
		if r.out >= r.ready && r.readyEvents > 0 {
			r.prog.Events += r.readyEvents
			r.prog.LastID, r.readyEvents = r.readyID, 0
		}
		return n, nil
	}
	if r.bodyErr != nil {
		r.err, r.bodyErr = r.bodyErr, nil
	}
	if r.err != nil {
		return 0, r.err
	}
	r.mu.Lock()
	body := r.cur
	r.mu.Unlock()
	if body == nil {
		return 0, ErrClosed
	}
	n, err := body.Read(b)
	r.prog.Bytes += int64(n)
	if err != nil {
		r.err = err
	}
	return n, err
}

// Close closes the body being read, once; later calls do nothing. A
// body that a Reconnect in flight returns is closed when it returns.
func (r *Reader) Close() error {
	r.mu.Lock()
	if r.closed.Load() {
		r.mu.Unlock()
		return nil
	}
	r.closed.Store(true)
	body := r.cur
	r.cur = nil
	r.mu.Unlock()
	if body == nil {
		return nil
	}
	return body.Close()
}
