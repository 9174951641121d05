package retryhttp

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/retryhttp/retryhttp/classify"
	"github.com/retryhttp/retryhttp/internal/resumption"
	"github.com/retryhttp/retryhttp/resume"

	"github.com/retryhttp/retryhttp/internal/evidence"
)

// A resumeBody is the body of a response that may be resumed: it passes
// the response's body on to the caller, and when a read of it fails after
// some bytes (the connection cut or reset, an HTTP/2 stream reset, a stall),
// it asks for the rest with a range request pinned to the first response's
// validator, checks that the answer continues the body, and reads on from
// it, within the caller's Read. The caller sees every byte once and in
// order, or a *resume.Error: never a byte the body did not have.
//
// It drives a copy of the request's retry machine, so that each resume is a
// retry like the others: planned, paid from the budget, reported, and sent
// away from the connection that failed.
//
// Its reading state belongs to the goroutine that calls Read; Close, and
// the stall watch, may run on others at any time, and share with Read, under
// mu, the body being read and the resume in flight.
type resumeBody struct {
	// Handed over by RoundTrip, then the reading goroutine's.
	t    *Transport
	req  *http.Request   // the caller's
	resp *http.Response  // the first response, as the caller has it
	a    *http.Request   // the request of the part being read
	pt   *evidence.Trace // its connection's trace
	// s is the request's retry machine. It is nil for a response to a
	// first attempt sent as the caller made it (no retry, no trace, no
	// throttling), whose machine holds nothing that t and req do not, and
	// is made when a failure needs it.
	s *retryState

	// Shared, under mu.
	mu        sync.Mutex
	cur       io.ReadCloser // the body being read, nil while a resume is in flight
	curClosed bool          // cur was closed by Close or by the stall watch
	closed    bool          // Close was called
	r         *bodyReader   // made by the first Read
}

// A bodyReader is what reading a resumable body takes beyond what RoundTrip
// hands over, made by the first Read, so that RoundTrip pays for a
// resumable response with one small allocation, and a body never read
// costs nothing more.
type bodyReader struct {
	// The reading goroutine's.
	mode    bodyMode
	rep     resumption.Representation
	why     resume.Reason      // why the body may not be resumed (modePass)
	part    *http.Response     // the response whose body is being read
	off     int64              // bytes the caller has received
	pending error              // a failure that came with bytes, acted on at the next Read
	err     error              // what every Read returns once the body has ended
	digest  *resumption.Digest // the running hash of the body, for its Repr-Digest
	resumes int
	gaveUp  bool // the end of the body was logged as a give-up

	// Shared, under the body's mu.
	stalled bool // the stall watch found a read waiting too long
	cancel  context.CancelCauseFunc
	watch   resumption.StallWatch
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

// offerResume makes the body of resp, the response to the attempt a, resume
// when it fails, unless the caller turned that off (NoResume) or allowed the
// request one attempt (MaxAttempts(ctx, 1), WithMaxAttempts(1)). It allocates once: the
// body, with a copy of s unless s is that of a first attempt sent as the
// caller made it.
func (s *retryState) offerResume(a *http.Request, pt *evidence.Trace, resp *http.Response) {
	p := s.policy()
	if p.noResume || p.maxAttempts <= 1 {
		return
	}
	var b *resumeBody
	if s.first() && pt == nil {
		b = &resumeBody{}
	} else {
		sb := &stateBody{state: *s}
		sb.state.countResumes()
		b = &sb.resumeBody
		b.s = &sb.state
	}
	b.t, b.req, b.resp, b.a, b.pt, b.cur = s.t, s.req, resp, a, pt, resp.Body
	resp.Body = b
}

// A stateBody is a resumable body with a copy of its request's retry
// machine, in one allocation.
type stateBody struct {
	resumeBody
	state retryState
}

// countResumes makes s, a body's own copy of its request's retry machine,
// count the body's resumes as attempts, beyond those made so far.
func (s *retryState) countResumes() {
	s.p = s.policy()
	s.p.maxAttempts = s.attempt + s.t.resumeLimit
}

// state returns the request's retry machine, making the machine of a first
// attempt sent as the caller made it when the body has none.
func (b *resumeBody) state() *retryState {
	if b.s == nil {
		s := &retryState{t: b.t, req: b.req, attempt: 1, header: b.req.Header}
		s.countResumes()
		b.s = s
	}
	return b.s
}

// start learns, on the first Read, whether the body may be resumed, and
// readies what resuming needs.
func (b *resumeBody) start() *bodyReader {
	r := &bodyReader{part: b.resp}
	r.rep, r.why = resumption.Describe(b.req, b.resp)
	r.mode = modeResume
	if r.why != "" {
		r.mode = modePass
	} else if r.rep.Whole() {
		r.digest = resumption.NewDigest(b.resp.Header["Repr-Digest"])
	}
	b.mu.Lock()
	b.r = r
	if d := b.t.stallTimeout; d > 0 && r.mode == modeResume && !b.closed {
		r.watch.Start(d, b.checkStall)
	}
	b.mu.Unlock()
	return r
}

func (b *resumeBody) Read(p []byte) (int, error) {
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
func (b *resumeBody) whole(n int, err error) (int, error) {
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
func (b *resumeBody) readOther(p []byte) (int, error) {
	r := b.r
	if r.mode == modeEnded {
		return 0, r.err
	}
	n, err := b.cur.Read(p)
	r.off += int64(n)
	if err == nil || err == io.EOF || b.isClosed() {
		return n, err
	}
	v := b.state().judge(b.a, nil, err)
	if v.Decision != classify.Retry {
		return n, err
	}
	rerr := &resume.Error{Reason: r.why, Offset: r.off, Err: err}
	b.report(GiveUpNotResumable, 0, nil, rerr, v)
	return n, b.end(rerr)
}

// readEnd reads past the announced length, which must be the end. The
// read is watched for stalls as any other: a server may send every byte of
// a body and leave its HTTP/2 stream open, and a body whose bytes are all
// in must not hang its caller for that. A stall, or any failure once every
// byte has arrived, ends the body whole; the end of a stream brings its
// trailers.
func (b *resumeBody) readEnd(p []byte) (int, error) {
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
func (b *resumeBody) complete() error {
	r := b.r
	if r.resumes > 0 {
		b.state().succeed()
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
// *resume.Error not logged as a give-up is logged here.
func (b *resumeBody) end(err error) error {
	r := b.r
	r.mode, r.err = modeEnded, err
	b.mu.Lock()
	r.watch.Stop()
	b.mu.Unlock()
	if rerr, ok := err.(*resume.Error); ok && !r.gaveUp {
		s := b.state()
		s.t.logBodyFailure(b.req, s.attempt, rerr, s.info)
	}
	return err
}

func (b *resumeBody) isClosed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.closed
}

// fail acts on a failed read, err: it resumes the body, and returns nil,
// when err is worth retrying and the body may be resumed; otherwise it ends
// the body and returns the error the caller gets.
func (b *resumeBody) fail(err error) error {
	stalled, closed := b.takeStalled()
	if closed {
		return b.end(err)
	}
	if stalled {
		err = resume.ErrStalled
	}
	v := b.state().judge(b.a, nil, err)
	if v.Decision != classify.Retry {
		return b.end(err)
	}
	return b.resume(err, v)
}

// takeStalled reports whether the stall watch found the last wait for the
// server stalled, clearing its mark, and whether the body is closed.
func (b *resumeBody) takeStalled() (stalled, closed bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	stalled, closed = b.r.stalled, b.closed
	b.r.stalled = false
	return stalled, closed
}

// resume fetches the rest of the body after the read of the current part
// failed with cause, judged v: as many times as the retry machine allows,
// each after its backoff and paid from the budget. It returns nil once a
// part that continues the body is being read, and otherwise ends the body.
func (b *resumeBody) resume(cause error, v classify.Verdict) error {
	s, r := b.state(), b.r
	a, pt, err := b.a, b.pt, cause
	failed, body := r.part, b.takePart() // the failed response, and its body to let go of
	var answered *http.Response          // the failed response, when it failed by its status
	for {
		delay, reason := s.plan(a, answered, err, v, nil)
		if reason == GiveUpAttemptsExhausted {
			reason = GiveUpResumeLimit
		}
		if reason == "" && !s.pay(v) {
			reason = GiveUpBudgetExhausted
		}
		if reason != "" {
			s.release(failed, body, err, v, pt)
			rerr := r.error(resume.GaveUp, statusOf(answered), joinCause(err, cause))
			rerr.GiveUp = reason
			b.report(reason, delay, answered, err, v)
			return b.end(rerr)
		}
		e := s.retryEvent(delay, answered, err, v, pt.Peer())
		e.Resume, e.Offset = true, r.off
		s.t.notify(e)
		s.release(failed, body, err, v, pt)
		ctx, ok := b.newAttempt()
		if !ok {
			s.refund()
			return b.end(errReadClosed)
		}
		if werr := s.wait(ctx, delay); werr != nil {
			// The wait refunded the budget.
			if b.isClosed() {
				return b.end(errReadClosed)
			}
			reason := waitReason(werr)
			b.report(reason, 0, answered, err, v)
			rerr := r.error(resume.GaveUp, 0, errors.Join(werr, cause))
			rerr.GiveUp = reason
			return b.end(rerr)
		}
		s.next(delay)
		r.resumes++
		var resp *http.Response
		a, pt, resp, err = b.sendRest(ctx)
		if err != nil {
			if b.isClosed() {
				// The caller let the body go while the resume was in
				// flight: nothing it paid for reached the caller.
				s.refund()
				return b.end(errReadClosed)
			}
			if v = s.judge(a, nil, err); v.Decision != classify.Retry {
				return b.end(r.error(resume.Failed, 0, joinCause(err, cause)))
			}
			failed, body, answered = nil, nil, nil
			continue
		}
		switch code := resp.StatusCode; {
		case code == http.StatusPartialContent:
			if why := r.rep.Continues(resp, r.off); why != "" {
				resp.Body.Close()
				return b.end(r.error(why, code, cause))
			}
			if !b.splice(a, pt, resp) {
				s.refund()
				return b.end(errReadClosed)
			}
			s.t.conns.Succeeded(pt)
			return nil
		case code/100 == 2 || code == http.StatusNotModified:
			resp.Body.Close()
			return b.end(r.error(resume.Changed, code, cause))
		}
		if v = s.judge(a, resp, nil); v.Decision != classify.Retry {
			resp.Body.Close()
			return b.end(r.error(resume.Refused, resp.StatusCode, cause))
		}
		failed, body, answered, err = resp, resp.Body, resp, nil
	}
}

// joinCause returns the error of a resume's failure, err, joined with
// cause, the error that cut the body, unless they are one.
func joinCause(err, cause error) error {
	if err == nil || err == cause {
		return cause
	}
	return errors.Join(err, cause)
}

// report logs the end of the body's resumes (delay is the wait the resume
// would have had, for GiveUpDeadline), reports it to the give-up hooks, and
// tells a server.Handler serving the request.
func (b *resumeBody) report(reason GiveUpReason, delay time.Duration, resp *http.Response, err error, v classify.Verdict) {
	s := b.state()
	e := s.giveUpEvent(reason, resp, err, v, b.pt.Peer())
	e.Resume, e.Offset = true, b.r.off
	b.r.gaveUp = true
	s.announceGiveUp(b.a, e, delay)
}

// takePart takes the body being read away from Close and the stall watch,
// for the reading goroutine to let go of: http.NoBody if either closed it
// already.
func (b *resumeBody) takePart() io.ReadCloser {
	b.mu.Lock()
	defer b.mu.Unlock()
	cur, closed := b.cur, b.curClosed
	b.cur, b.curClosed = nil, false
	if closed || cur == nil {
		return http.NoBody
	}
	return cur
}

// newAttempt makes the context of the next resume, derived from the
// request's, which Close and the stall watch can cancel, and releases the
// last one's. It reports false once the body is closed.
func (b *resumeBody) newAttempt() (context.Context, bool) {
	ctx, cancel := context.WithCancelCause(b.req.Context())
	b.mu.Lock()
	closed, last := b.closed, b.r.cancel
	b.r.cancel = cancel
	b.mu.Unlock()
	if last != nil {
		last(context.Canceled)
	}
	if closed {
		cancel(context.Canceled)
		return nil, false
	}
	return ctx, true
}

// sendRest sends the request for the rest of the body, from the caller's
// offset, under ctx, as the current attempt. The stall watch bounds the
// wait for its headers as it bounds a read.
func (b *resumeBody) sendRest(ctx context.Context) (*http.Request, *evidence.Trace, *http.Response, error) {
	s, r := b.state(), b.r
	a := s.req.WithContext(s.context(ctx))
	s.prepare(a, r.rep.RangeHeader(s.header, r.off), true)
	r.watch.Enter()
	a, pt, resp, err := s.send(a, nil)
	r.watch.Leave()
	if stalled, _ := b.takeStalled(); stalled && err != nil {
		// The stall watch cancelled the resume's context, not the
		// caller's: the attempt is judged under the caller's, so that
		// the stall is retried as other timeouts are.
		a, err = a.WithContext(s.context(b.req.Context())), resume.ErrStalled
	}
	return a, pt, resp, err
}

// splice makes resp, the answer of a for the rest, the part being read. It
// reports false, closing resp, when the body was closed meanwhile.
func (b *resumeBody) splice(a *http.Request, pt *evidence.Trace, resp *http.Response) bool {
	b.mu.Lock()
	closed := b.closed
	if !closed {
		b.cur, b.curClosed = resp.Body, false
	}
	b.mu.Unlock()
	if closed {
		resp.Body.Close()
		return false
	}
	b.a, b.pt, b.r.part = a, pt, resp
	return true
}

// Close closes the body being read and ends a resume in flight and the
// stall watch. It may be called while a Read is under way, from another
// goroutine, and more than once: the second call does nothing.
func (b *resumeBody) Close() error {
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
func (b *resumeBody) checkStall() {
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
