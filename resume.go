package retryhttp

import (
	"context"
	"io"
	"net/http"
	"time"

	"github.com/retryhttp/retryhttp/classify"
	"github.com/retryhttp/retryhttp/internal/config"
	"github.com/retryhttp/retryhttp/internal/evidence"
	"github.com/retryhttp/retryhttp/internal/giveup"
	"github.com/retryhttp/retryhttp/internal/resumption"
	"github.com/retryhttp/retryhttp/resume"
)

// WithResume turns on the resumption of response bodies, as New does by
// default, configured by opts: resume.Limit (10 resumes per body) and
// resume.StallTimeout (10 s). A response body that fails after its headers
// (a cut, a reset, a stall) is asked for again from where the caller is,
// when that is provably safe, and the caller's Read goes on; otherwise the
// read ends with a *resume.Error. Each resume is a retry in every other
// respect: paid from the budget, after its backoff, within the request's
// context. Package resume says which bodies are resumed, and how. Given
// more than once, its options add up, field by field, a later one
// overriding an earlier one.
func WithResume(opts ...resume.Option) Option {
	c := config.NewResume()
	for _, o := range opts {
		if o == nil {
			panic("retryhttp: WithResume: nil resume.Option")
		}
		o(&c) // an invalid value panics here, at the option
	}
	return func(t *Transport) {
		t.resumeOpts = append(t.resumeOpts, opts...)
		t.given |= givenResume
	}
}

// WithoutResume turns off the resumption of response bodies: a body that
// fails after the response headers fails the caller's read, as it would
// through a plain transport. NoResume turns it off for one call.
func WithoutResume() Option {
	return func(t *Transport) { t.resumeLimit, t.given = 0, t.given|givenNoResume }
}

// NoResume returns a copy of ctx under which response bodies are not
// resumed, as WithoutResume does for a whole Transport: for a caller that
// resumes by itself (an SDK's download manager), or that would rather see
// the failure. MaxAttempts(ctx, 1) turns resumption off too.
func NoResume(ctx context.Context) context.Context {
	return withCallOptions(ctx, func(co *callOptions) { co.noResume = true })
}

// resumeCandidate reports whether resp, the response RoundTrip is about to
// return, shows that its body might be resumed: a 200 with a body that
// shows Accept-Ranges: bytes, or a 206, through a Transport that resumes.
// It is all a response that cannot be resumed pays for.
func resumeCandidate(t *Transport, resp *http.Response) bool {
	if t.resumeLimit == 0 || resp.ContentLength == 0 || resp.Body == http.NoBody {
		return false
	}
	switch resp.StatusCode {
	case http.StatusOK:
		return resumption.AcceptsRanges(resp.Header["Accept-Ranges"])
	case http.StatusPartialContent:
		return true
	}
	return false
}

// A resumeBody is the body of a response that may be resumed: package
// resumption's reader, and the request's retry machine it drives, so that
// each resume is a retry like the others: planned, paid from the budget,
// reported, and sent away from the connection that failed. Its methods
// are resumption.Retries', called on the goroutine reading the body.
type resumeBody struct {
	resumption.Body[resumeAttempt, *resumeBody]
	t *Transport
	// s is the request's retry machine. It is nil for a response to a
	// first attempt sent as the caller made it (no retry, no trace, no
	// throttling), whose machine holds nothing that t and the caller's
	// request do not, and is made when a failure needs it.
	s *retryState
}

// A resumeAttempt is an attempt of a resumable body's request: its
// request as sent, and its connection's trace.
type resumeAttempt struct {
	a  *http.Request
	pt *evidence.Trace
}

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
	b.t = s.t
	b.Wrap(resp, s.req, resumeAttempt{a, pt}, b)
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
		req := b.Request()
		s := &retryState{t: b.t, req: req, attempt: 1, header: req.Header}
		s.countResumes()
		b.s = s
	}
	return b.s
}

func (b *resumeBody) StallTimeout() time.Duration { return b.t.stallTimeout }

func (b *resumeBody) Judge(a resumeAttempt, resp *http.Response, err error) classify.Verdict {
	return b.state().judge(a.a, resp, err)
}

// Plan plans the resume as plan plans a retry, under the body's limit of
// resumes, and pays for it from the budget.
func (b *resumeBody) Plan(a resumeAttempt, resp *http.Response, err error, v classify.Verdict) (time.Duration, giveup.Reason) {
	s := b.state()
	delay, reason := s.plan(a.a, resp, err, v, nil)
	if reason == GiveUpAttemptsExhausted {
		reason = GiveUpResumeLimit
	}
	if reason == "" && !s.pay(v) {
		reason = GiveUpBudgetExhausted
	}
	return delay, reason
}

// Retry reports the resume to the retry hooks and the log, as a
// RetryEvent with Resume set.
func (b *resumeBody) Retry(a resumeAttempt, delay time.Duration, resp *http.Response, err error, v classify.Verdict, off int64) {
	s := b.state()
	e := s.retryEvent(delay, resp, err, v, a.pt.Peer())
	e.Resume, e.Offset = true, off
	s.t.notify(e)
}

func (b *resumeBody) Release(a resumeAttempt, resp *http.Response, body io.ReadCloser, err error, v classify.Verdict) {
	b.state().release(resp, body, err, v, a.pt)
}

func (b *resumeBody) Wait(ctx context.Context, delay time.Duration) (giveup.Reason, error) {
	s := b.state()
	if err := s.wait(ctx, delay); err != nil {
		return waitReason(err), err
	}
	s.next(delay)
	return "", nil
}

// Send sends the request for the rest as the current attempt, made from
// the caller's request under ctx, with the attempts' header.
func (b *resumeBody) Send(ctx context.Context, rest resumption.Rest) (resumeAttempt, *http.Response, error) {
	s := b.state()
	a := s.req.WithContext(s.context(ctx))
	s.prepare(a, rest.Header(s.header), true)
	a, pt, resp, err := s.send(a, nil)
	return resumeAttempt{a, pt}, resp, err
}

func (b *resumeBody) Stalled(a resumeAttempt) resumeAttempt {
	a.a = a.a.WithContext(b.state().context(b.Request().Context()))
	return a
}

func (b *resumeBody) Continued(a resumeAttempt) { b.t.conns.Succeeded(a.pt) }

func (b *resumeBody) Refund() { b.state().refund() }

func (b *resumeBody) Succeed() { b.state().succeed() }

// GiveUp reports the end of the body's resumes to the give-up hooks and
// the log, as a GiveUpEvent with Resume set: GiveUpNotResumable for a body
// that may not be resumed.
func (b *resumeBody) GiveUp(a resumeAttempt, reason giveup.Reason, delay time.Duration, resp *http.Response, err error, v classify.Verdict, off int64) {
	if reason == "" {
		reason = GiveUpNotResumable
	}
	s := b.state()
	e := s.giveUpEvent(reason, resp, err, v, a.pt.Peer())
	e.Resume, e.Offset = true, off
	s.announceGiveUp(a.a, e, delay)
}

// Failed logs err, which ends the body.
func (b *resumeBody) Failed(err *resume.Error) {
	s := b.state()
	s.t.logBodyFailure(b.Request(), s.attempt, err, s.info)
}
