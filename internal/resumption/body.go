package resumption

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"

	"github.com/retryhttp/retryhttp/classify"
	"github.com/retryhttp/retryhttp/resume"
)

// A Body is the body of a response that may be resumed: it passes the
// response's body on to the caller, and when a read of it fails after some
// bytes (the connection cut or reset, an HTTP/2 stream reset, a stall), it
// asks for the rest with a range request pinned to the first response's
// validator, checks that the answer continues the body, and reads on from
// it, within the caller's Read. The caller sees every byte once and in
// order, or a *resume.Error: never a byte the body did not have.
//
// It drives the request's retry machine, R, so that each resume is a
// retry like the others: planned, paid from the budget, reported, and sent
// away from the connection that failed. R is the type of the root's that
// holds the Body, so that the two take one allocation; A is what the
// machine knows of an attempt of the request (Retries).
//
// Its reading state belongs to the goroutine that calls Read; Close, and
// the stall watch, may run on others at any time, and share with Read,
// under mu, the body being read and the resume in flight.
type Body[A any, R Retries[A]] struct {
	// Handed over by Wrap, then the reading goroutine's.
	retries R
	req     *http.Request  // the caller's
	resp    *http.Response // the first response, as the caller has it
	part    A              // the attempt of the part being read

	shared
}

// shared is what a Body's reading goroutine shares with Close and the
// stall watch, under mu. Its methods, unlike a Body's, are the same for
// every Body: the stall watch's timer calls one.
type shared struct {
	mu        sync.Mutex
	cur       io.ReadCloser // the body being read, nil while a resume is in flight
	curClosed bool          // cur was closed by Close or by the stall watch
	closed    bool          // Close was called
	r         *bodyReader   // made by the first Read
}

// Wrap makes b the body of resp, the response to the attempt a of req,
// the caller's request, whose resumes retries drives: b reads the body
// resp has, and resp gets b.
func (b *Body[A, R]) Wrap(resp *http.Response, req *http.Request, a A, retries R) {
	b.retries, b.req, b.resp, b.part, b.cur = retries, req, resp, a, resp.Body
	resp.Body = b
}

// Request returns the caller's request, as Wrap was given it.
func (b *Body[A, R]) Request() *http.Request { return b.req }

// A bodyReader is what reading a resumable body takes beyond what Wrap
// hands over, made by the first Read, so that RoundTrip pays for a
// resumable response with one small allocation, and a body never read
// costs nothing more.
type bodyReader struct {
	// The reading goroutine's.
	mode    bodyMode
	rep     Representation
	why     resume.Reason  // why the body may not be resumed (modePass)
	part    *http.Response // the response whose body is being read
	off     int64          // bytes the caller has received
	pending error          // a failure that came with bytes, acted on at the next Read
	err     error          // what every Read returns once the body has ended
	digest  *Digest        // the running hash of the body, for its Repr-Digest
	resumes int
	gaveUp  bool // the end of the body was reported as a give-up

	// Shared, under the body's mu.
	stalled bool // the stall watch found a read waiting too long
	cancel  context.CancelCauseFunc
	watch   StallWatch
}

type bodyMode uint8

const (
	modeResume bodyMode = iota // resumable
	modePass                   // not resumable: passed on as it is, its failure explained
	modeEnded                  // over: every Read returns err
)

// errReadClosed is the error of a read of a closed body, or of one closed
// while a resume was in flight.
var errReadClosed = errors.New("retryhttp: read on closed response body")

// start learns, on the first Read, whether the body may be resumed, and
// readies what resuming needs.
func (b *Body[A, R]) start() *bodyReader {
	r := &bodyReader{part: b.resp}
	r.rep, r.why = Describe(b.req, b.resp)
	r.mode = modeResume
	if r.why != "" {
		r.mode = modePass
	} else if r.rep.Whole() {
		r.digest = NewDigest(b.resp.Header["Repr-Digest"])
	}
	d := b.retries.StallTimeout()
	b.mu.Lock()
	b.r = r
	if d > 0 && r.mode == modeResume && !b.closed {
		r.watch.Start(d, b.checkStall)
	}
	b.mu.Unlock()
	return r
}

// Read reads the body into p, resuming it when a read fails and it may be
// resumed.
func (b *Body[A, R]) Read(p []byte) (int, error) {
	r := b.r
	if r == nil {
		r = b.start()
	}
	for {
		if r.mode != modeResume {
			return b.readOther(p)
		}
		if err := r.pending; err != nil {
			r.pending = nil
			if err = b.fail(err); err != nil {
				return 0, err
			}
			continue
		}
		left := r.rep.Length() - r.off
		if left == 0 {
			return b.readEnd(p)
		}
		if int64(len(p)) > left {
			p = p[:left]
		}
		r.watch.Enter()
		n, err := b.cur.Read(p)
		r.watch.Leave()
		if n > 0 {
			r.off += int64(n)
			if r.digest != nil {
				r.digest.Write(p[:n])
			}
		}
		if r.off == r.rep.Length() {
			// Every announced byte has arrived, and an error that came
			// with the last of them cut nothing.
			return b.whole(n, err)
		}
		switch {
		case err == nil:
			return n, nil
		case err == io.EOF:
			err = io.ErrUnexpectedEOF // shorter than announced: cut
		}
		if n > 0 {
			r.pending = err
			return n, nil
		}
		if err = b.fail(err); err != nil {
			return 0, err
		}
		// Resumed: read on from the rest.
	}
}

// whole acts on the read of n bytes, which ended in err, that brought the
// body to its announced length. A digest that does not match ends the body
// with this Read, holding back its n bytes: a reader that stops at the
// announced length (io.ReadFull, io.CopyN) takes no error that comes with
// the last bytes it asked for, and would miss the verdict. Otherwise the
// bytes are the caller's, with io.EOF when the body said it ended (or
// failed: every byte is in), and the next Read looks past the end.
func (b *Body[A, R]) whole(n int, err error) (int, error) {
	r := b.r
	if r.digest != nil && !r.digest.Matches() {
		r.off -= int64(n)
		return 0, b.end(r.error(resume.DigestMismatch, 0, nil))
	}
	if err != nil {
		return n, b.complete()
	}
	return n, nil
}

// readOther reads a body that is not, or no longer, resumable.
func (b *Body[A, R]) readOther(p []byte) (int, error) {
	r := b.r
	if r.mode == modeEnded {
		return 0, r.err
	}
	n, err := b.cur.Read(p)
	r.off += int64(n)
	if err == nil || err == io.EOF || b.isClosed() {
		return n, err
	}
	v := b.retries.Judge(b.part, nil, err)
	if v.Decision != classify.Retry {
		return n, err
	}
	rerr := &resume.Error{Reason: r.why, Offset: r.off, Err: err}
	b.report("", 0, nil, rerr, v)
	return n, b.end(rerr)
}

// readEnd reads past the announced length, which must be the end. The
// read is watched for stalls as any other: a server may send every byte of
// a body and leave its HTTP/2 stream open, and a body whose bytes are all
// in must not hang its caller for that. A stall, or any failure once every
// byte has arrived, ends the body whole; the end of a stream brings its
// trailers.
func (b *Body[A, R]) readEnd(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	r := b.r
	r.watch.Enter()
	n, err := b.cur.Read(p[:1])
	r.watch.Leave()
	switch {
	case n > 0:
		return 0, b.end(r.error(resume.WrongLength, 0, nil))
	case err == nil:
		return 0, nil
	}
	return 0, b.complete()
}

// complete ends a body that has all its bytes, checked: it refunds the
// budget for the last resume, which succeeded, and gives the caller's
// response the trailers of the part that ended the body.
func (b *Body[A, R]) complete() error {
	r := b.r
	if r.resumes > 0 {
		b.retries.Succeed()
		if tr := r.part.Trailer; len(tr) > 0 && r.part != b.resp {
			if b.resp.Trailer == nil {
				b.resp.Trailer = make(http.Header, len(tr))
			}
			for k, v := range tr {
				b.resp.Trailer[k] = v
			}
		}
	}
	return b.end(io.EOF)
}

// error returns the error that ends the body for reason.
func (r *bodyReader) error(reason resume.Reason, status int, err error) *resume.Error {
	return &resume.Error{Reason: reason, Offset: r.off, Resumes: r.resumes, StatusCode: status, Err: err}
}

// end ends the body: every later Read returns err, which end returns. A
// *resume.Error not reported as a give-up is reported here.
func (b *Body[A, R]) end(err error) error {
	r := b.r
	r.mode, r.err = modeEnded, err
	b.mu.Lock()
	r.watch.Stop()
	b.mu.Unlock()
	if rerr, ok := err.(*resume.Error); ok && !r.gaveUp {
		b.retries.Failed(rerr)
	}
	return err
}

func (b *Body[A, R]) isClosed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.closed
}

// Close closes the body being read and ends a resume in flight and the
// stall watch. It may be called while a Read is under way, from another
// goroutine, and more than once: the second call does nothing.
func (b *Body[A, R]) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	cur, curClosed := b.cur, b.curClosed
	b.curClosed = true
	var cancel context.CancelCauseFunc
	if r := b.r; r != nil {
		cancel = r.cancel
		r.watch.Stop()
	}
	b.mu.Unlock()
	var err error
	if cur != nil && !curClosed {
		err = cur.Close()
	}
	if cancel != nil {
		cancel(context.Canceled)
	}
	return err
}

// checkStall is the stall watch's check, on the timer's goroutine: a read
// found stalled has its body closed, which ends the read, and a resume
// found waiting too long for its headers is cancelled.
func (b *shared) checkStall() {
	b.mu.Lock()
	r := b.r
	if b.closed || r.watch.Off() {
		b.mu.Unlock()
		return
	}
	var cur io.ReadCloser
	if r.watch.Check() {
		r.stalled = true
		if b.cur != nil && !b.curClosed {
			cur, b.curClosed = b.cur, true
		} else if b.cur == nil && r.cancel != nil {
			r.cancel(resume.ErrStalled)
		}
	}
	r.watch.Rearm()
	b.mu.Unlock()
	if cur != nil {
		cur.Close()
	}
}
