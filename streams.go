package retryhttp

import (
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/retryhttp/retryhttp/classify"
	"github.com/retryhttp/retryhttp/internal/config"
	"github.com/retryhttp/retryhttp/internal/eventstream"
	"github.com/retryhttp/retryhttp/internal/evidence"
	"github.com/retryhttp/retryhttp/internal/streaming"
	"github.com/retryhttp/retryhttp/stream"
)

// WithStreams turns on the care of event streams (text/event-stream),
// configured by opts: stream.FirstEventWait (5 s) and stream.Limit (10). A
// 200 stream is held for its first event and judged by it (stream.Errors
// first), so that an LLM API's error event is retried as its status would
// be; a GET stream cut after it is resumed with Last-Event-ID; any other
// stream cut after it ends in a *stream.Error, never resent. Package
// stream says how. A response that is not a stream costs a header lookup.
// Given more than once, its options add up.
func WithStreams(opts ...stream.Option) Option {
	c := config.NewStream()
	for _, o := range opts {
		if o == nil {
			panic("retryhttp: WithStreams: nil stream.Option")
		}
		o(&c) // an invalid value panics here, at the option
	}
	return func(t *Transport) {
		t.streamOpts = append(t.streamOpts, opts...)
		t.given |= givenStreams
	}
}

// configureStreams builds the care of streams from its options.
func (t *Transport) configureStreams() {
	if t.given&givenStreams == 0 {
		return
	}
	c := config.NewStream()
	for _, o := range t.streamOpts {
		o(&c)
	}
	t.streamWait, t.streamLimit = c.FirstEventWait, c.Limit
	t.streamOpts = nil
}

// streamErrors judges a held stream by its first event, in front of the
// Transport's classifiers.
var streamErrors = stream.Errors()

// holdsStream reports whether resp is a stream the Transport holds for
// its first event: a 200 event stream, through a Transport WithStreams.
func (t *Transport) holdsStream(resp *http.Response) bool {
	return t.streamWait > 0 && resp.StatusCode == http.StatusOK && resp.Body != nil && resp.Body != http.NoBody &&
		eventstream.IsEventStream(resp.Header.Get("Content-Type"))
}

// holdStream holds resp, the response to the attempt a, until its first
// event, and returns the failure of its body before one, if any.
func (s *retryState) holdStream(a *http.Request, resp *http.Response) error {
	h := streaming.Hold(resp.Body, eventstream.Limits{})
	resp.Body = h
	wait := s.t.streamWait
	if dl, ok := a.Context().Deadline(); ok {
		wait = min(wait, dl.Sub(s.t.now()))
	}
	h.Wait(wait, a.Context().Done())
	return h.Failed()
}

// isHeld reports whether body is that of a held stream.
func isHeld(body io.ReadCloser) bool {
	_, ok := body.(*streaming.Held)
	return ok
}

// healthyStream is how long a resumed stream must run, with an event, for
// its resumes to count afresh.
const healthyStream = 30 * time.Second

// A streamBody is the body of a held stream handed to the caller: package
// eventstream's reader, which passes on whole events only, and, for a GET
// that may be resumed, the request's retry machine that its resumes
// drive, each a retry like the others.
type streamBody struct {
	r eventstream.Reader
	t *Transport
	s retryState
	a *http.Request // the attempt whose body is being read

	inRow     int       // resumes since the last healthy period
	resumedAt time.Time // when the last resume's body came
	eventsAt  int64     // events delivered by then
}

// offerStream makes the body of resp, the held stream of the attempt a,
// one that passes on whole events, and resumes a GET stream that is cut.
func (s *retryState) offerStream(a *http.Request, resp *http.Response) {
	b := &streamBody{t: s.t, a: a}
	var reconnect eventstream.Reconnect
	p := s.policy()
	if s.t.streamLimit > 0 && !p.noResume && p.maxAttempts > 1 && a.Method == http.MethodGet &&
		(s.req.Body == nil || s.req.Body == http.NoBody) {
		b.s = *s
		b.s.p = p
		reconnect = b.reconnect
	}
	b.r.Init(resp.Body, eventstream.Limits{}, reconnect)
	resp.Body = b
}

func (b *streamBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err != nil && err != io.EOF {
		var se *stream.Error
		if !errors.As(err, &se) {
			pr := b.r.Progress()
			err = &stream.Error{Read: pr.Bytes, Events: pr.Events, Resumes: pr.Resumes, Err: err}
		}
	}
	return n, err
}

func (b *streamBody) Close() error { return b.r.Close() }

// errStreamAnswer is the failure of a resume answered by a response that
// does not continue the stream.
type errStreamAnswer struct{ status string }

func (e errStreamAnswer) Error() string {
	return "retryhttp: stream resume answered " + e.status + ", not an event stream"
}

// reconnect continues the stream after cut, a failure of its body: it
// judges the failure, plans, pays and reports its resume as a retry, waits
// the server's retry field or the backoff, and asks for the rest with
// Last-Event-ID; a stream that ended cleanly ends.
func (b *streamBody) reconnect(cut eventstream.Cut) (io.ReadCloser, error) {
	if cut.Err == io.EOF {
		return nil, io.EOF // the server ended the stream
	}
	if !validID(cut.LastID) {
		return nil, cut.Err // no header could carry it
	}
	s, t := &b.s, b.t
	now := t.now()
	if b.inRow > 0 && cut.Events > b.eventsAt && now.Sub(b.resumedAt) >= healthyStream {
		// A healthy period: the resumes count afresh, and the backoff,
		// which grows with the attempt's number, starts over.
		b.inRow, s.prev, s.attempt = 0, 0, 1
	}
	var resp *http.Response
	var pt *evidence.Trace
	err := cut.Err
	for {
		v := s.judge(b.a, resp, err)
		if v.Decision != classify.Retry || b.inRow >= t.streamLimit {
			return nil, b.end(resp, err)
		}
		s.p.maxAttempts = s.attempt + 1 // the limit is streamLimit's
		delay, reason := s.plan(b.a, resp, err, v, nil)
		if reason == "" && cut.HasRetry {
			delay = min(cut.Retry, t.retryAfterLimit)
		}
		if reason != "" || !s.pay(v) {
			return nil, b.end(resp, err)
		}
		e := s.retryEvent(delay, resp, err, v, pt.Peer())
		e.Resume, e.Offset = true, cut.Bytes
		t.notify(e)
		if resp != nil {
			s.release(resp, resp.Body, err, v, pt)
		}
		ctx := s.req.Context()
		if werr := s.wait(ctx, delay); werr != nil {
			return nil, werr
		}
		s.next(delay)
		b.inRow++
		a := s.req.WithContext(s.context(ctx))
		h := s.header.Clone()
		h.Set("Last-Event-ID", cut.LastID)
		s.prepare(a, h, true)
		a, pt, resp, err = s.send(a, nil)
		b.a = a
		if err == nil && resp.StatusCode == http.StatusOK && eventstream.IsEventStream(resp.Header.Get("Content-Type")) {
			b.resumedAt, b.eventsAt = t.now(), cut.Events
			return resp.Body, nil
		}
		if err == nil && resp.StatusCode == http.StatusNoContent {
			resp.Body.Close()
			return nil, io.EOF // the server says the stream is over
		}
	}
}

// end returns the failure that ends a stream's resumes: err, or that of
// resp, a response that does not continue the stream, which it closes.
func (b *streamBody) end(resp *http.Response, err error) error {
	if resp != nil {
		resp.Body.Close()
		return errStreamAnswer{resp.Status}
	}
	return err
}

// validID reports whether id may be sent as a header's value: no control
// byte but a tab (an id's line ends and NULs are the parser's to refuse).
func validID(id string) bool {
	for i := range len(id) {
		if c := id[i]; c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}
