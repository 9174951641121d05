package resumption

import (
	"context"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/retryhttp/retryhttp/classify"
	"github.com/retryhttp/retryhttp/internal/giveup"
	"github.com/retryhttp/retryhttp/resume"
)

// fail acts on a failed read, err: it resumes the body, and returns nil,
// when err is worth retrying and the body may be resumed; otherwise it ends
// the body and returns the error the caller gets.
func (b *Body[A, R]) fail(err error) error {
	stalled, closed := b.takeStalled()
	if closed {
		return b.end(err)
	}
	if stalled {
		err = resume.ErrStalled
	}
	v := b.retries.Judge(b.part, nil, err)
	if v.Decision != classify.Retry {
		return b.end(err)
	}
	return b.resume(err, v)
}

// takeStalled reports whether the stall watch found the last wait for the
// server stalled, clearing its mark, and whether the body is closed.
func (b *Body[A, R]) takeStalled() (stalled, closed bool) {
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
func (b *Body[A, R]) resume(cause error, v classify.Verdict) error {
	s, r := b.retries, b.r
	a, err := b.part, cause
	failed, body := r.part, b.takePart() // the failed response, and its body to let go of
	var answered *http.Response          // the failed response, when it failed by its status
	for {
		delay, reason := s.Plan(a, answered, err, v)
		if reason != "" {
			s.Release(a, failed, body, err, v)
			rerr := r.error(resume.GaveUp, statusOf(answered), joinCause(err, cause))
			rerr.GiveUp = reason
			b.report(reason, delay, answered, err, v)
			return b.end(rerr)
		}
		s.Retry(a, delay, answered, err, v, r.off)
		s.Release(a, failed, body, err, v)
		ctx, ok := b.newAttempt()
		if !ok {
			s.Refund()
			return b.end(errReadClosed)
		}
		if reason, werr := s.Wait(ctx, delay); werr != nil {
			// The wait refunded the budget.
			if b.isClosed() {
				return b.end(errReadClosed)
			}
			b.report(reason, 0, answered, err, v)
			rerr := r.error(resume.GaveUp, 0, errors.Join(werr, cause))
			rerr.GiveUp = reason
			return b.end(rerr)
		}
		r.resumes++
		var resp *http.Response
		a, resp, err = b.sendRest(ctx)
		if err != nil {
			if b.isClosed() {
				// The caller let the body go while the resume was in
				// flight: nothing it paid for reached the caller.
				s.Refund()
				return b.end(errReadClosed)
			}
			if v = s.Judge(a, nil, err); v.Decision != classify.Retry {
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
			if !b.splice(a, resp) {
				s.Refund()
				return b.end(errReadClosed)
			}
			s.Continued(a)
			return nil
		case code/100 == 2 || code == http.StatusNotModified:
			resp.Body.Close()
			return b.end(r.error(resume.Changed, code, cause))
		}
		if v = s.Judge(a, resp, nil); v.Decision != classify.Retry {
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

// report reports the end of the body's resumes, for reason ("" for a body
// that may not be resumed; delay is the wait the resume would have had),
// to the retry machine, which logs it and tells the give-up hooks.
func (b *Body[A, R]) report(reason giveup.Reason, delay time.Duration, resp *http.Response, err error, v classify.Verdict) {
	b.r.gaveUp = true
	b.retries.GiveUp(b.part, reason, delay, resp, err, v, b.r.off)
}

// statusOf returns resp's status code, 0 when there is no response.
func statusOf(resp *http.Response) int {
	if resp == nil {
		return 0
	}
	return resp.StatusCode
}

// takePart takes the body being read away from Close and the stall watch,
// for the reading goroutine to let go of: http.NoBody if either closed it
// already.
func (b *Body[A, R]) takePart() io.ReadCloser {
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
func (b *Body[A, R]) newAttempt() (context.Context, bool) {
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
func (b *Body[A, R]) sendRest(ctx context.Context) (A, *http.Response, error) {
	r := b.r
	r.watch.Enter()
	a, resp, err := b.retries.Send(ctx, Rest{rep: &r.rep, off: r.off})
	r.watch.Leave()
	if stalled, _ := b.takeStalled(); stalled && err != nil {
		// The stall watch cancelled the resume's context, not the
		// caller's: the attempt is judged under the caller's, so that
		// the stall is retried as other timeouts are.
		a, err = b.retries.Stalled(a), resume.ErrStalled
	}
	return a, resp, err
}

// splice makes resp, the answer of a for the rest, the part being read. It
// reports false, closing resp, when the body was closed meanwhile.
func (b *Body[A, R]) splice(a A, resp *http.Response) bool {
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
	b.part, b.r.part = a, resp
	return true
}
