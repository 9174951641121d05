// Package replay gives each attempt of a request its own body. Given the
// caller's body, its GetBody and a buffer limit, it decides how each
// attempt gets one: from GetBody, from a copy taken as the first attempt
// sends the caller's body, or none; and whether another attempt can be
// sent at all. It never reads the caller's body ahead of the send (a
// full-duplex caller writes more only once the response has begun), never
// buffers past the limit, and closes the caller's body once, when the
// request is over. It never sends, never logs and never decides whether a
// request may be retried: the Transport's loop asks it for bodies.
package replay

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"time"
)

// A Replay produces the request body for each attempt of one request.
//
// A body with GetBody is sent as it is, and each retry asks GetBody for a
// fresh one. A body without GetBody is copied, up to the buffer limit, while
// the first attempt sends it (see tee): nothing is read before the first
// attempt starts, so a caller that writes more of its body only once the
// response has begun (a full-duplex exchange) is never blocked by the copy.
// A retry resends the copy only when it is complete: when an attempt ended
// with part of the body sent (a server that answered before reading it, a
// connection lost mid-upload), the copy is finished from the caller's body,
// within the limit and within FinishTimeout, before the retry.
type Replay struct {
	kind replayKind
	// getBody makes a fresh body for each retry (kindGetBody).
	getBody func() (io.ReadCloser, error)
	// watch is set when getBody may return a stream that an earlier
	// attempt's body shares (kindGetBody): each attempt's body is then
	// watched for the base's close.
	watch bool
	// sent is the body the last attempt was given (kindGetBody, watch),
	// which the base closes once it no longer reads it.
	sent *watchedBody
	// tee copies the caller's body as it is sent (kindTee).
	tee *tee
	// buf is the complete copy, once a retry has needed it (kindTee).
	buf []byte
}

type replayKind uint8

const (
	kindNone    replayKind = iota // no body: every attempt sends none
	kindGetBody                   // the caller's GetBody makes each retry's body
	kindTee                       // the body is copied as the first attempt sends it
	kindOnce                      // retries are off: the caller's body is passed through
)

// ErrNotReplayable is the reason a retry of a body without GetBody is
// not made: the copy of the body is not complete.
var ErrNotReplayable = errors.New("retryhttp: request body cannot be sent again")

// Prepare decides how the body of req, which has one, will be sent on each
// attempt, in r, a zero replay. It reads nothing.
func (r *Replay) Prepare(req *http.Request, limit int64, retries bool) {
	switch {
	case !retries:
		r.kind = kindOnce
	case req.GetBody != nil:
		r.kind, r.getBody, r.watch = kindGetBody, req.GetBody, !FreshBodies(req.GetBody)
	default:
		r.kind, r.tee = kindTee, newTee(req.Body, limit, req.ContentLength)
	}
}

// First returns the body of the first attempt: the caller's, or a view of
// it that copies what the base reads.
func (r *Replay) First(req *http.Request) io.ReadCloser {
	switch r.kind {
	case kindTee:
		return r.tee.view()
	case kindGetBody:
		if r.watch {
			r.sent = watchBody(req.Body)
			return r.sent
		}
	}
	return req.Body
}

// Modifies reports whether the first attempt must carry another body than
// the caller's request: a copy, or a body watched for its close.
func (r *Replay) Modifies() bool { return r.kind == kindTee || (r.kind == kindGetBody && r.watch) }

// Next returns the body for a retry, or an error when the body cannot be
// sent again. The caller must close it if the retry is abandoned before it
// is handed to the base transport. With a copied body, next must be called
// only once the previous attempt's outcome is known; it ends that attempt's
// use of the body.
func (r *Replay) Next() (io.ReadCloser, error) {
	switch r.kind {
	case kindNone:
		return nil, nil
	case kindGetBody:
		// Many GetBody functions rewind and return the same stream (the
		// Azure SDK's among them): calling one while the base still reads
		// the last attempt's body would send a retry whose body is cut.
		// net/http closes a request body once it is done with it, perhaps
		// after RoundTrip returned; wait for that, a little.
		if r.sent != nil && !r.sent.waitClosed(closeWait) {
			return nil, ErrNotReplayable
		}
		b, err := r.getBody()
		if err == nil && b == nil {
			err = errors.New("retryhttp: Request.GetBody returned a nil body")
		}
		if err != nil {
			return nil, err
		}
		if !r.watch {
			return b, nil
		}
		r.sent = watchBody(b)
		return r.sent, nil
	case kindTee:
		if r.buf != nil {
			return bufferedBody(r.buf), nil
		}
		body, buf, ok := r.tee.next()
		if !ok {
			return nil, ErrNotReplayable
		}
		if buf != nil {
			r.buf = buf
		}
		return body, nil
	}
	return nil, ErrNotReplayable
}

// None reports whether the request has no body: every attempt sends none.
func (r *Replay) None() bool { return r.kind == kindNone }

// Source returns where a resend of net/http's gets its body when the body
// is copied as it is sent, nil otherwise.
func (r *Replay) Source() Source {
	if r.kind == kindTee {
		return r.tee
	}
	return nil
}

// A Source gives the body of a resend.
type Source interface {
	Resend() (io.ReadCloser, error)
}

// GetBody is a Request.GetBody as a Source.
type GetBody func() (io.ReadCloser, error)

// Resend returns f().
func (f GetBody) Resend() (io.ReadCloser, error) { return f() }

// closeWait is how long Next waits for the base to close the last
// attempt's body before asking a GetBody that may rewind the same stream:
// as long as the Transport gives a body to drain.
const closeWait = 100 * time.Millisecond

// Done tells the replay that the request is over: the caller's body is
// closed once the base no longer uses it.
func (r *Replay) Done() {
	if r.kind == kindTee {
		r.tee.release()
	}
}

// SetBody puts body on the attempt request a, a copy of the caller's req,
// keeping its length right. A copied body gets a GetBody only when the
// request may be resent (resend), so that the base's own retry machinery is
// never armed for a request that may not be sent twice.
func (r *Replay) SetBody(a *http.Request, body io.ReadCloser, resend bool) {
	switch r.kind {
	case kindNone:
		return
	case kindTee:
		a.Body = body
		if r.buf == nil {
			return // the caller's body, or a view of it: its length stands
		}
		if len(r.buf) == 0 {
			a.Body, a.ContentLength = http.NoBody, 0
		} else {
			a.ContentLength = int64(len(r.buf))
		}
		if resend {
			buf := r.buf // not r: capturing r would move every replay to the heap
			a.GetBody = func() (io.ReadCloser, error) { return bufferedBody(buf), nil }
		}
	default:
		a.Body = body
	}
}

// A watchedBody is a request body that reports when it is closed. Its
// channel is made only when someone waits, so that a request that is never
// retried pays for the wrapper alone.
type watchedBody struct {
	io.ReadCloser
	mu     sync.Mutex
	closed bool
	waitCh chan struct{} // made by a waiter, closed by Close
}

func watchBody(b io.ReadCloser) *watchedBody { return &watchedBody{ReadCloser: b} }

func (w *watchedBody) Close() error {
	err := w.ReadCloser.Close()
	w.mu.Lock()
	if !w.closed {
		w.closed = true
		if w.waitCh != nil {
			close(w.waitCh)
		}
	}
	w.mu.Unlock()
	return err
}

// waitClosed waits at most d for the body to be closed, and reports
// whether it was.
func (w *watchedBody) waitClosed(d time.Duration) bool {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return true
	}
	if w.waitCh == nil {
		w.waitCh = make(chan struct{})
	}
	ch := w.waitCh
	w.mu.Unlock()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
		return false
	}
}

func bufferedBody(buf []byte) io.ReadCloser {
	if len(buf) == 0 {
		return http.NoBody
	}
	b := &bytesBody{}
	b.Reset(buf)
	return b
}

// bytesBody is a request body read from memory.
type bytesBody struct{ bytes.Reader }

func (*bytesBody) Close() error { return nil }

// initialCopy bounds the first allocation of a copy, however long the body
// says it is, so that a declared length never reserves memory before the
// bytes arrive.
const initialCopy = 32 << 10

// A tee copies a request body without GetBody as the base transport reads
// it, through views: one per attempt, of which only the newest reads.
//
// The caller's body (src) is closed exactly once: when a retry replaces it
// by its complete copy, or, once the request is over, as soon as the base
// has closed the last view handed to it (which net/http may do after
// RoundTrip returned, while it still streams the body).
type tee struct {
	mu    sync.Mutex
	src   io.ReadCloser
	limit int64 // the most bytes copied
	want  int64 // the declared length, when positive
	buf   []byte
	n     int64 // bytes read from src
	eof   bool  // src reported io.EOF
	over  bool  // src had more than limit bytes: buf was dropped
	// reading reports a Read of src under way, outside mu; idle, made
	// when a copy is finished, is signalled when one ends.
	reading bool
	idle    *sync.Cond
	// abandoned tells the reader finishing the copy to stop.
	abandoned bool
	// gen numbers the current view; older views neither read nor close.
	gen        uint32
	first      teeView // the view of generation 0
	viewClosed bool    // the current view was closed
	final      bool    // the request is over: close src with the current view
	srcClosed  bool
}

func newTee(src io.ReadCloser, limit, want int64) *tee {
	t := &tee{src: src, limit: limit, want: max(want, 0)}
	t.first.t = t
	return t
}

// view returns the current view of the body.
func (t *tee) view() io.ReadCloser {
	if t.gen == 0 {
		return &t.first
	}
	return &teeView{t: t, gen: t.gen}
}

// complete reports whether the copy holds the whole body: src ended, or
// gave the declared length, within the limit. t.mu must be held.
func (t *tee) complete() bool {
	return !t.over && (t.eof || (t.want > 0 && t.n == t.want))
}

// next returns the body of a retry, ending the current view: the complete
// copy (returned as buf too), finished from src if the base read only part
// of it, or a new view of src if nothing has been read from it. It reports
// false when none is possible: src is longer than the limit, or cannot be
// read to its end in time.
func (t *tee) next() (body io.ReadCloser, buf []byte, ok bool) {
	t.mu.Lock()
	switch {
	case t.complete():
		t.gen++
		buf = t.buf
		if buf == nil {
			buf = []byte{}
		}
		t.closeSrcUnlock(true)
		return bufferedBody(buf), buf, true
	case t.n == 0 && !t.reading && !t.srcClosed:
		// The base never read the body: the attempt failed before
		// sending it. Send the caller's body itself again.
		t.gen++
		t.viewClosed = false
		v := &teeView{t: t, gen: t.gen}
		t.mu.Unlock()
		return v, nil, true
	case !t.over && !t.srcClosed:
		// The attempt ended with part of the body sent: a server that
		// answered before reading it all, a connection lost mid-upload.
		// What was sent is in the copy and the rest in the caller's body:
		// finish the copy from it.
		return t.finish()
	}
	t.mu.Unlock()
	return nil, nil, false
}

// resend returns a body for net/http's own resend of the current attempt,
// which wrote nothing of it: as next does.
func (t *tee) Resend() (io.ReadCloser, error) {
	body, _, ok := t.next()
	if !ok {
		return nil, ErrNotReplayable
	}
	return body, nil
}

// FinishTimeout bounds how long finishing a copy waits for the caller's
// body: a body that a caller fills only as the exchange goes on (a pipe)
// must not stall the retry decision.
const FinishTimeout = time.Second

// finish ends the current view, so that the base reads no more of it, and
// reads the rest of src into the copy, within the limit and FinishTimeout.
// It returns the complete copy as next does, or reports false if the copy
// cannot be completed; the request then ends, and src is closed as usual.
// t.mu must be held; finish unlocks it.
func (t *tee) finish() (body io.ReadCloser, buf []byte, ok bool) {
	t.gen++
	t.viewClosed = true // no view is current: release closes src at once
	if t.idle == nil {
		t.idle = sync.NewCond(&t.mu)
	}
	t.mu.Unlock()

	done := make(chan struct{})
	go func() {
		defer close(done)
		t.readRest()
	}()
	timer := time.NewTimer(FinishTimeout)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		t.mu.Lock()
		t.abandoned = true // the reader stops after its read under way
		t.mu.Unlock()
		return nil, nil, false
	}
	t.mu.Lock()
	if !t.complete() {
		t.mu.Unlock()
		return nil, nil, false
	}
	buf = t.buf
	if buf == nil {
		buf = []byte{}
	}
	t.closeSrcUnlock(true)
	return bufferedBody(buf), buf, true
}

// readRest reads src into the copy until it is complete, over the limit,
// or failed, after waiting for a read of the base's that is under way.
func (t *tee) readRest() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for t.reading {
		t.idle.Wait()
	}
	p := make([]byte, 32<<10)
	for !t.over && !t.complete() && !t.srcClosed && !t.abandoned {
		q := p
		if t.want > 0 && t.want > t.n {
			q = p[:min(int64(len(p)), t.want-t.n)] // never read past the declared length
		}
		if _, err := t.readLocked(q); err != nil && err != io.EOF {
			t.over, t.buf = true, nil // the body cannot be read whole: no copy
			return
		}
	}
}

// release marks the request over, closing src now if the base has closed
// the current view already, or else when it does.
func (t *tee) release() {
	t.mu.Lock()
	t.final = true
	t.closeSrcUnlock(t.viewClosed)
}

// closeSrcUnlock unlocks t.mu, which must be held, and closes src if now is
// true and src is still open. It closes src without the lock held, since
// closing a body may block.
func (t *tee) closeSrcUnlock(now bool) {
	now = now && !t.srcClosed
	if now {
		t.srcClosed = true
	}
	t.mu.Unlock()
	if now {
		t.src.Close()
	}
}

// A teeView is the body one attempt sends.
type teeView struct {
	t   *tee
	gen uint32
}

func (v *teeView) Read(p []byte) (int, error) {
	t := v.t
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case v.gen != t.gen || t.srcClosed:
		return 0, ErrBodyEnded
	case t.eof:
		return 0, io.EOF
	}
	return t.readLocked(p)
}

// readLocked reads src into p, copying what it reads. t.mu must be held; it
// is released during the read.
func (t *tee) readLocked(p []byte) (int, error) {
	t.reading = true
	t.mu.Unlock()
	n, err := t.src.Read(p)
	t.mu.Lock()
	t.reading = false
	if t.idle != nil {
		t.idle.Broadcast()
	}
	t.n += int64(n)
	if !t.over {
		if int64(len(t.buf))+int64(n) > t.limit {
			t.over, t.buf = true, nil
		} else if n > 0 {
			if t.buf == nil {
				t.buf = make([]byte, 0, min(max(t.want, int64(n)), t.limit, initialCopy))
			}
			t.buf = append(t.buf, p[:n]...)
		}
	}
	if err == io.EOF {
		t.eof = true
	}
	return n, err
}

// Close ends the view. It closes the caller's body only once the request is
// over; until then a retry may still need it.
func (v *teeView) Close() error {
	t := v.t
	t.mu.Lock()
	if v.gen != t.gen {
		t.mu.Unlock()
		return nil
	}
	t.viewClosed = true
	t.closeSrcUnlock(t.final)
	return nil
}

// ErrBodyEnded is what a view that is no longer current returns to a base
// still reading it.
var ErrBodyEnded = errors.New("retryhttp: request body read after its attempt ended")

// newRequestGetBodies holds the code of the GetBody functions that
// http.NewRequest makes for a *bytes.Buffer, *bytes.Reader or
// *strings.Reader body. Each call of one returns a reader of its own over
// a snapshot of the bytes, which no read of another body moves.
var newRequestGetBodies = func() (code [3]uintptr) {
	for i, body := range []io.Reader{new(bytes.Buffer), new(bytes.Reader), new(strings.Reader)} {
		// A body of one byte: an empty one gets no GetBody.
		switch b := body.(type) {
		case *bytes.Buffer:
			b.WriteByte('x')
		case *bytes.Reader:
			b.Reset([]byte{'x'})
		case *strings.Reader:
			b.Reset("x")
		}
		if req, err := http.NewRequest(http.MethodPost, "http://localhost/", body); err == nil && req.GetBody != nil {
			code[i] = reflect.ValueOf(req.GetBody).Pointer()
		}
	}
	return code
}()

// FreshBodies reports whether getBody is one that http.NewRequest made, whose
// bodies never share a stream: a retry may ask it for a body while the base
// still reads the last one, and the first attempt can send the caller's
// body unwatched. Any other GetBody may rewind and return one shared
// stream, as the Azure SDK's does.
func FreshBodies(getBody func() (io.ReadCloser, error)) bool {
	p := reflect.ValueOf(getBody).Pointer()
	return p != 0 && (p == newRequestGetBodies[0] || p == newRequestGetBodies[1] || p == newRequestGetBodies[2])
}
