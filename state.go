package retryhttp

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"time"

	"github.com/retryhttp/retryhttp/budget"
	"github.com/retryhttp/retryhttp/classify"
	"github.com/retryhttp/retryhttp/internal/attempt"
	"github.com/retryhttp/retryhttp/internal/deadlinefmt"
	"github.com/retryhttp/retryhttp/internal/layer"
	"github.com/retryhttp/retryhttp/internal/replay"
	"github.com/retryhttp/retryhttp/internal/sender"
	"github.com/retryhttp/retryhttp/internal/throttling"
	"github.com/retryhttp/retryhttp/internal/wire"

	"github.com/retryhttp/retryhttp/internal/guard"

	"github.com/retryhttp/retryhttp/internal/evidence"
)

// A retryState is the retry machine of one request: what its attempts
// share, from the first attempt to the last retry and, for a response body
// that may be resumed, to the body's last resume, after RoundTrip has
// returned. The attempt loop of RoundTrip and a resumable body drive it
// alike: each failure is judged by the classifier, its retry planned by
// plan, paid from the budget, reported to the hooks and the log, and sent
// away from the connection and the address that failed.
//
// RoundTrip keeps it on its stack; a resumable body takes a copy of its
// own (or, after a first attempt sent as the caller made it, makes one
// when it first fails), so that a request whose response cannot be
// resumed allocates nothing for it.
type retryState struct {
	t   *Transport
	req *http.Request // the caller's
	// p is the request's policy, the zero policy until something needs it:
	// a retry, or a first attempt that depends on it.
	p policy
	// body gives each attempt its request body.
	body replay.Replay
	// header is every attempt's header: the caller's, or a copy carrying
	// an automatic idempotency key (keyed).
	header http.Header
	keyed  bool
	// guarded is set when the request may not be sent twice: each attempt
	// is guarded against the base's own resends.
	guarded bool
	th      *throttling.Host // the host's counts, under adaptive throttling
	// left is the time left before the request's deadline that the next
	// attempt's deadline headers carry (WithDeadlineHeader), measured just
	// before it is sent; 0 when none are sent.
	left time.Duration

	attempt int                // the current attempt's number, from 1
	resent  int                // sends the base made again on its own, beyond the attempts
	unsent  int                // attempts started that were never written (hedges cancelled as they dialled)
	spent   budget.Millitokens // what the budget took for the current retry
	prev    time.Duration      // the previous retry's delay
	failed  []netip.AddrPort   // where earlier attempts failed and left, for a base.Dialer
	info    bool               // the call has logged its one line at INFO
	// misdirected is set once a misdirected attempt (421) is retried, which
	// happens once a request; fresh while the current attempt is that
	// retry, which goes on a new connection.
	misdirected, fresh bool
}

// start readies the retries of req, a valid request, through t. It
// reports false, with the probability of refusal, when adaptive throttling
// refuses the request, after logging any change of the host's throttling
// the refusal found.
func (s *retryState) start(t *Transport, req *http.Request) (float64, bool) {
	s.t, s.req, s.attempt, s.header = t, req, 1, req.Header
	if t.throttle != nil {
		th, p, ok, c := t.throttle.Admit(req)
		if !ok {
			t.logThrottleChange(req.Context(), c)
			return p, false
		}
		s.th = th
	}
	hasBody := req.Body != nil && req.Body != http.NoBody
	// The caller's overrides are read at once only when they change how the
	// first attempt is sent; for a request without a body whose method is
	// idempotent, only once a retry is considered, so that a success costs
	// nothing.
	idempotent := wire.IdempotentMethod(req.Method)
	if hasBody || !idempotent || t.attemptHeader != "" || t.hedge != nil {
		s.p = t.policy(req)
	}
	if hasBody {
		s.body.Prepare(req, t.bodyBufferLimit, s.p.maxAttempts > 1)
	}
	if t.autoKeys && !s.p.resendable && !idempotent && !wire.HasIdempotencyKey(s.header) {
		s.header, s.keyed = s.header.Clone(), true
		s.header.Set(idempotencyKeyHeader, wire.NewIdempotencyKey())
	}
	// A request that may not be sent twice is guarded on every attempt:
	// the base must not resend it on its own, and only a guard can prove
	// that an attempt never reached the server.
	s.guarded, s.header = guard.Header(s.header, !s.p.resendable && !idempotent)
	return 0, true
}

// policy returns the request's policy, reading it on first use.
func (s *retryState) policy() policy {
	if s.p.maxAttempts == 0 {
		s.p = s.t.policy(s.req)
	}
	return s.p
}

// first reports whether the request has made one attempt, sent as the
// caller made it: nothing in the machine but its Transport and request.
func (s *retryState) first() bool {
	return s.attempt == 1 && s.th == nil && s.spent == 0 && len(s.failed) == 0 &&
		!s.keyed && !s.guarded && s.body.None()
}

// request returns the current attempt's request, whose body is body, and
// its guard if it has one: the caller's request itself when nothing about
// the attempt differs from it, or else a copy.
func (s *retryState) request(body io.ReadCloser) (*http.Request, *guard.Guard) {
	req, t := s.req, s.t
	if s.attempt == 1 && !s.body.Modifies() && !s.keyed && !s.guarded && t.attemptHeader == "" && s.left == 0 {
		return req, nil
	}
	actx := s.context(req.Context())
	var g *guard.Guard
	if s.guarded {
		g, actx = guard.Start(actx, t.guardBase)
	}
	a := g.Request(req, actx)
	s.prepare(a, s.header, false)
	s.body.SetBody(a, body, !s.guarded)
	if s.guarded {
		// net/http resends a request with a body by itself only
		// through GetBody: give it one for the resend that proves
		// nothing was sent, and none after any other failure.
		a.GetBody = guard.GetBody(&s.body, req.GetBody)
	}
	return a, g
}

// context returns the context of the current attempt, derived from ctx:
// a retry's carries its number and the peers to avoid, and an attempt
// that sends its deadline carries the time left it sends.
func (s *retryState) context(ctx context.Context) context.Context {
	if s.attempt > 1 {
		ctx = attempt.WithNumber(ctx, s.attempt)
		if len(s.failed) > 0 {
			ctx = attempt.WithFailed(ctx, s.failed)
		}
	}
	if s.left > 0 {
		ctx = deadlinefmt.WithSent(ctx, s.left)
	}
	return ctx
}

// prepare gives a, a copy of the caller's request for the current attempt,
// the header h (copied first unless owned, when the attempt is numbered or
// carries its deadline).
func (s *retryState) prepare(a *http.Request, h http.Header, owned bool) {
	a.Header = h
	if s.t.attemptHeader != "" {
		if !owned {
			a.Header, owned = h.Clone(), true
		}
		wire.SetField(a.Header, s.t.attemptHeader, wire.AttemptValue(s.attempt, s.p.maxAttempts))
	}
	if s.left > 0 {
		a.Header = s.t.snd.Header(a.Header, owned, s.left)
	}
}

// hedges reports whether the current attempt is a first attempt to hedge.
func (s *retryState) hedges() bool {
	req := s.req
	return s.attempt == 1 && s.t.hedge != nil && !s.guarded &&
		hedgeable(req, wire.IdempotentMethod(req.Method), req.Body != nil && req.Body != http.NoBody, s.p)
}

// send sends the attempt a, whose guard is g, through the base (the retry
// of a 421 through a clone of it that dials a new connection), tracing its
// connection when the Transport traces peers, once its host lets it
// (connEvidence.admit), and counts and reports the sends the base made
// again on its own before it logs the attempt. It returns the attempt's
// request as sent, with its trace.
func (s *retryState) send(a *http.Request, g *guard.Guard) (*http.Request, *evidence.Trace, *http.Response, error) {
	if !s.traced(a) {
		resp, err := s.t.send(a)
		return a, nil, resp, err
	}
	var refuse []netip.AddrPort
	if g == nil && (a.Body == nil || a.Body == http.NoBody || a.GetBody != nil) {
		refuse = s.failed
	}
	turn, err := s.t.conns.Admit(a)
	if err != nil {
		return a, nil, nil, err
	}
	a, pt := evidence.NewTrace(a, refuse, g, s.t.conns, turn)
	var rt http.RoundTripper = s.t.base
	if s.fresh {
		// Only an *http.Transport base, whose attempts are traced, has
		// a clone that dials new connections.
		rt, s.fresh = s.t.newConns(), false
	}
	resp, err := s.t.snd.Exchange(rt, a)
	pt.End()
	pt.Settle()
	s.countResends(pt)
	if s.t.logger != nil {
		s.t.logAttempt(a, resp, err)
	}
	return a, pt, resp, err
}

// traced reports whether the attempt a is traced: when the Transport can
// trace its connection, and it is a retry, or its host failed lately, or
// the Transport reports every attempt to hooks or a log.
func (s *retryState) traced(a *http.Request) bool {
	t := s.t
	return t.peers && (t.traceAll || s.attempt > 1 || s.fresh || t.conns.Traces(a) || t.traceLog && t.logsAttempts(a))
}

// judge classifies the outcome of the attempt a, and counts it for
// adaptive throttling, which logs any change of the host's throttling the
// count makes.
func (s *retryState) judge(a *http.Request, resp *http.Response, err error) classify.Verdict {
	v := s.t.classify(a, resp, err)
	if th := s.t.throttle; th != nil {
		if c := th.Record(s.th, s.req, err, v, s.attempt); c.Kind != throttling.Same {
			s.t.logThrottleChange(s.req.Context(), c)
			s.info = true // the change of throttling is the call's line at INFO
		}
	}
	return v
}

// plan decides whether the failed attempt a, with verdict v, is retried
// and after what delay, as Transport.plan does under the request's policy.
// A misdirected attempt is retried once, on a new connection: not when
// its request was retried so already, nor when the base cannot open one.
func (s *retryState) plan(a *http.Request, resp *http.Response, err error, v classify.Verdict, g *guard.Guard) (time.Duration, GiveUpReason) {
	delay, reason := s.t.plan(a, resp, err, s.attempt, s.prev, v, g, s.policy())
	if reason == "" && v.Misdirected {
		if s.misdirected || s.t.newConns() == nil {
			return 0, GiveUpMisdirected
		}
		s.misdirected, s.fresh = true, true
	}
	return delay, reason
}

// release lets go of the failed attempt's response, if any, whose body is
// body: closed unread when the retry should leave its connection
// (evidence.Leave says when), which then goes with it, and otherwise
// drained a little so that the connection is reused. It records where the
// attempt failed, when the retry leaves it, for the retry to avoid.
func (s *retryState) release(resp *http.Response, body io.ReadCloser, err error, v classify.Verdict, pt *evidence.Trace) {
	failure := err != nil || evidence.InstanceFailure(resp, v.Misdirected, v.Throttle)
	leave, fresh := s.t.conns.Leave(s.req, pt, resp, err, failure, func() bool { return s.t.newConns() != nil })
	s.fresh = s.fresh || fresh
	switch {
	case resp != nil && leave:
		body.Close()
	case resp != nil:
		attempt.DiscardBody(body)
	}
	if peer := pt.Peer(); leave && peer.IsValid() {
		s.failed = append(s.failed, peer)
	}
}

// wait waits for the retry's delay, or until ctx is done, and then measures
// the time left for the retry's deadline headers. When ctx is done first,
// or the wait left less than 1 ms before the deadline (a timer that fired
// late; the error is then ErrNoTimeLeft), the retry is not made, and the
// budget gets back what it took for it.
func (s *retryState) wait(ctx context.Context, delay time.Duration) error {
	err := sender.Sleep(ctx, delay, nil)
	if err == nil {
		var ok bool
		if s.t.snd.Pacer != nil {
			err = s.awaitTurn(ctx, s.attempt+1)
		}
		if err == nil {
			if s.left, ok = s.t.snd.TimeToSend(ctx); !ok {
				s.t.log().NotSent(s.req, s.attempt+1, "retryhttp: not sending", string(GiveUpDeadline), slog.Duration("time_left", max(s.left, 0)))
				layer.MarkGaveUp(ctx)
				err = ErrNoTimeLeft
			}
		}
	}
	if err != nil {
		s.refund()
	}
	return err
}

// next moves to the next attempt, made after a retry's delay.
func (s *retryState) next(delay time.Duration) {
	s.prev = delay
	s.attempt++
}

// retryEvent describes the retry about to be made after the failed attempt
// whose outcome is resp or err, for the hooks.
func (s *retryState) retryEvent(delay time.Duration, resp *http.Response, err error, v classify.Verdict, peer netip.AddrPort) RetryEvent {
	return RetryEvent{Request: s.req, Attempt: s.attempt, Delay: delay, StatusCode: statusOf(resp), Err: err, Verdict: v, Peer: peer, TimeLeft: s.t.snd.LeftAfter(s.req, delay)}
}

// giveUpEvent describes the end of the retries after the failed attempt
// whose outcome is resp or err, for the hooks.
func (s *retryState) giveUpEvent(reason GiveUpReason, resp *http.Response, err error, v classify.Verdict, peer netip.AddrPort) GiveUpEvent {
	return GiveUpEvent{Request: s.req, Attempt: s.attempt, Reason: reason, StatusCode: statusOf(resp), Err: err, Verdict: v, Peer: peer}
}

// bodyOf returns resp's body, nil when there is no response.
func bodyOf(resp *http.Response) io.ReadCloser {
	if resp == nil {
		return nil
	}
	return resp.Body
}

// statusOf returns resp's status code, 0 when there is no response.
func statusOf(resp *http.Response) int {
	if resp == nil {
		return 0
	}
	return resp.StatusCode
}

// countResends counts the sends of the current attempt, traced by pt, that
// the base made again on its own, and reports each to the retry hooks and
// the log as a RetryEvent with BaseResend set.
func (s *retryState) countResends(pt *evidence.Trace) {
	for _, peer := range pt.Resends() {
		s.resent++
		s.t.notify(RetryEvent{Request: s.req, Attempt: s.attempt, Peer: peer, BaseResend: true})
	}
}

// sent returns how many sends of the request reached the wire: its
// attempts and the base's own resends.
func (s *retryState) sent() int { return s.attempt + s.resent - s.unsent }

// plan decides whether the failed attempt a is retried and after what
// delay. It returns a non-empty reason when it is not, with the delay the
// retry would have had for GiveUpDeadline, and 0 for other reasons.
func (t *Transport) plan(a *http.Request, resp *http.Response, err error, attempt int, prev time.Duration, v classify.Verdict, g *guard.Guard, p policy) (time.Duration, GiveUpReason) {
	if attempt >= p.maxAttempts {
		return 0, GiveUpAttemptsExhausted
	}
	if !p.resendable && !notProcessed(resp) && !mayResend(a.Method, a.Header, err, g) {
		return 0, GiveUpNotResendable
	}
	var delay time.Duration
	switch {
	case v.Misdirected:
		// Sent at once: the server did no work and another connection
		// answers it.
	case v.Throttle:
		delay = max(t.throttleBackoff(attempt, prev, t.rand()), 0)
	default:
		delay = max(t.backoff(attempt, prev, t.rand()), 0)
	}
	if v.RetryAfter > t.retryAfterLimit {
		return 0, GiveUpRetryAfterLimit
	}
	delay = max(delay, v.RetryAfter)
	now := t.now()
	if h := signalHeader(resp, err); h != nil {
		floor, tooLong := retryAfterFloor(h, now, t.retryAfterLimit)
		if tooLong {
			return 0, GiveUpRetryAfterLimit
		}
		delay = max(delay, floor)
		if t.rateLimitHints && v.Throttle {
			if reset, ok := wire.RateLimitReset(h, now); ok {
				if reset > t.retryAfterLimit {
					return 0, GiveUpRateLimitResetLimit
				}
				delay = max(delay, reset)
			}
		}
	}
	if !t.snd.RetryFits(a, now, delay) {
		return delay, GiveUpDeadline // the delay, for the log
	}
	return delay, ""
}
