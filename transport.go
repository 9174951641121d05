package retryhttp

import (
	"errors"
	"hash/maphash"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/retryhttp/retryhttp/backoff"
	"github.com/retryhttp/retryhttp/budget"
	"github.com/retryhttp/retryhttp/classify"
	"github.com/retryhttp/retryhttp/deadline"
	"github.com/retryhttp/retryhttp/hedge"
	"github.com/retryhttp/retryhttp/internal/attempt"
	"github.com/retryhttp/retryhttp/internal/config"
	"github.com/retryhttp/retryhttp/internal/conns"
	"github.com/retryhttp/retryhttp/internal/deadlinefmt"
	"github.com/retryhttp/retryhttp/internal/deadlines"
	"github.com/retryhttp/retryhttp/internal/hedging"
	"github.com/retryhttp/retryhttp/internal/layer"
	"github.com/retryhttp/retryhttp/internal/pacing"
	"github.com/retryhttp/retryhttp/internal/replay"
	"github.com/retryhttp/retryhttp/internal/sender"
	"github.com/retryhttp/retryhttp/internal/throttling"
	"github.com/retryhttp/retryhttp/internal/wire"
	"github.com/retryhttp/retryhttp/pace"
	"github.com/retryhttp/retryhttp/resume"
	"github.com/retryhttp/retryhttp/stream"
	"github.com/retryhttp/retryhttp/throttle"

	"github.com/retryhttp/retryhttp/internal/guard"

	"github.com/retryhttp/retryhttp/internal/evidence"

	"github.com/retryhttp/retryhttp/internal/latency"
)

// A Transport is an http.RoundTripper that retries failed attempts of a
// request through a base RoundTripper, when retrying is safe and worthwhile:
//
//   - the outcome is transient (the Classifier says Retry);
//   - the request may be sent again (its method is idempotent, it carries an
//     Idempotency-Key, it is declared resendable with WithResendable or
//     Resendable, the failure proves it never reached the server, or the
//     server answered 421 Misdirected Request, which it did not process)
//     and its body can be replayed;
//   - attempts remain (WithMaxAttempts, or MaxAttempts for one call), the
//     wait fits the request's deadline and any Retry-After within its
//     limit, and the Budget pays for the retry.
//
// Otherwise it returns exactly what the base returned for the last attempt:
// the response, even a 503, with its body unread and a nil error, or, when no
// response exists, an *Error wrapping the last error.
//
// A Transport is immutable once New returns it and is safe for concurrent
// use by many goroutines. The zero Transport is ready to use and behaves as
// New() does, with every default: on first use it makes a Transport with
// New() and hands every call to it. Most callers want
//
//	client := &http.Client{Transport: retryhttp.New()}
type Transport struct {
	base            http.RoundTripper // nil only in a Transport New did not make
	given           given             // the options that New checks against each other
	settings        setting           // the settings given, each once
	plainClassifier bool              // the classifier is the default one
	maxAttempts     int
	backoff         backoff.Func
	throttleBackoff backoff.Func
	classifier      classify.Classifier
	budget          budget.Budget // nil: retries are not budgeted
	retryAfterLimit time.Duration
	attemptTimeout  time.Duration
	bodyBufferLimit int64
	autoKeys        bool
	attemptHeader   string
	rateLimitHints  bool
	onRetry         func(RetryEvent)
	onGiveUp        func(GiveUpEvent)
	onHedge         func(HedgeEvent)
	onPace          func(PaceEvent)
	resendable      func(*http.Request) bool
	hedge           *hedging.Hedging // nil: no hedging
	throttle        *throttling.Throttler
	logger          *slog.Logger
	guardBase       guard.Base         // what the guards of key-less POSTs know of the base
	peers           bool               // attempts' connections can be traced
	traceAll        bool               // every attempt is traced: hooks report peers and the base's resends
	traceLog        bool               // every attempt is traced while the logger writes INFO or below (logsAttempts)
	conns           *evidence.Evidence // what traced connections showed; nil when none are
	deadlineHeaders []deadline.Format  // nil: no deadline is sent
	snd             sender.Sender      // sends each attempt: made by New from the fields above
	shaped          bool               // attempts are numbered, hedged, throttled or traced: none is plain
	resumeLimit     int                // the most resumes of a body; 0: bodies are not resumed
	streamWait      time.Duration      // how long a stream is held for its first event; 0: streams are not held
	streamLimit     int                // the most resumes of a stream in a row
	stallTimeout    time.Duration
	// The options of features given once or more, until New builds them.
	resumeOpts   []resume.Option
	streamOpts   []stream.Option
	hedgeOpts    []hedge.Option
	throttleOpts []throttle.Option
	paceOpts     []pace.Option

	// now and rand are the clock and the random source of jitter, uniform in
	// [0, 1). In-package tests replace them.
	now  func() time.Time
	rand func() float64

	// made is the Transport that a zero Transport hands its calls to, made
	// by New() once, on first use.
	made     *Transport
	makeOnce sync.Once

	// fresh is the transport of the retries that must go on a new
	// connection (after a 421), made from the base on first use; nil when
	// none can be (newConns).
	fresh     *http.Transport
	freshOnce sync.Once
}

var _ http.RoundTripper = (*Transport)(nil)

// New returns a Transport configured by opts over the defaults listed in the
// package documentation. It panics, naming the option, when an option's
// value is invalid.
func New(opts ...Option) *Transport {
	rc := config.NewResume()
	t := &Transport{
		maxAttempts:     defaultMaxAttempts,
		backoff:         backoff.Default(),
		throttleBackoff: backoff.DefaultThrottle(),
		classifier:      classify.Default(),
		budget:          budget.NewPerHost(),
		retryAfterLimit: defaultRetryAfterLimit,
		bodyBufferLimit: defaultBodyBufferLimit,
		resumeLimit:     rc.Limit,
		stallTimeout:    rc.StallTimeout,
		now:             time.Now,
		rand:            rand.Float64,
	}
	for i, o := range opts {
		if o == nil {
			panic("retryhttp: New: option " + strconv.Itoa(i+1) + " of " + strconv.Itoa(len(opts)) + " is nil")
		}
		o(t)
	}
	t.given.check(t.maxAttempts)
	t.configure()
	t.plainClassifier = t.classifier == defaultClassifier
	if t.base == nil {
		t.base = defaultBase()
	}
	direct := returnsLast(t.base)
	t.guardBase = guard.BaseOf(t.base, direct)
	t.peers = tracesPeers(t)
	if t.peers {
		t.conns = evidence.New(func() time.Time { return t.now() }, direct)
		t.traceAll = t.onRetry != nil || t.onGiveUp != nil
		t.traceLog = !t.traceAll && t.logger != nil
	}
	t.snd.Base, t.snd.AttemptTimeout, t.snd.Headers, t.snd.Now = t.base, t.attemptTimeout, t.deadlineHeaders, func() time.Time { return t.now() }
	if t.hedge != nil {
		t.snd.Answers = t.hedge.Table() // hedging records every answer of a request it may hedge
	} else {
		// A table of the Transport's own records the attempts of requests
		// with a deadline only, so that a request without one costs no
		// clock reading.
		t.snd.Answers, t.snd.Records, t.snd.RecordEvery = latency.NewTable(deadlines.Hosts), true, sender.RecordEvery
	}
	t.snd.PaceChanged = t.logPaceChange
	t.shaped = t.attemptHeader != "" || t.hedge != nil || t.throttle != nil || t.traceAll
	return t
}

// configure builds each feature from its options, given once or more:
// applied in order over the feature's defaults, so that options given
// again add up field by field.
func (t *Transport) configure() {
	if t.given&givenResume != 0 && t.given&givenNoResume == 0 {
		c := config.NewResume()
		for _, o := range t.resumeOpts {
			o(&c)
		}
		t.resumeLimit, t.stallTimeout = c.Limit, c.StallTimeout
	}
	if t.given&givenHedging != 0 {
		t.hedge = hedging.New(t.hedgeOpts)
	}
	if t.given&givenThrottling != 0 {
		t.throttle = newThrottling(t, t.throttleOpts)
	}
	if t.given&givenPacing != 0 {
		t.snd.Pace = config.NewPace()
		for _, o := range t.paceOpts {
			o(&t.snd.Pace)
		}
		t.snd.Pace.RetryAfterLimit = t.retryAfterLimit
		t.snd.Pacer, t.snd.Seed = pacing.New(t.snd.Pace), maphash.MakeSeed()
		if st, ok := t.snd.Pace.Store.(pace.Store); ok {
			t.snd.Pacer.Shared(st, func() time.Time { return t.now() },
				func(r any) { t.log().Panic("retryhttp: pace store panicked; pacing alone", r) })
		}
	}
	t.configureStreams()
	t.resumeOpts, t.hedgeOpts, t.throttleOpts, t.paceOpts = nil, nil, nil, nil
}

// ready returns the Transport that does t's work: t itself when New made
// it, and for a zero Transport one that New() makes on first use.
func (t *Transport) ready() *Transport {
	if t.base != nil {
		return t
	}
	t.makeOnce.Do(func() { t.made = New() })
	return t.made
}

// CloseIdleConnections closes the base transport's idle connections, if it
// has a CloseIdleConnections method, so that http.Client.CloseIdleConnections
// reaches the connection pool.
func (t *Transport) CloseIdleConnections() {
	if c, ok := t.ready().base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// PacedHosts returns how many hosts (partitions, with pace.PartitionHeader)
// are paced now (WithPacing), for a gauge: those that throttled, or
// announced a quota nearly spent, within the last 30 s. It visits every
// host remembered, at most pace.MaxHosts; 0 without WithPacing.
func (t *Transport) PacedHosts() int {
	t = t.ready()
	if t.snd.Pacer == nil {
		return 0
	}
	return t.snd.Pacer.Paced(t.now())
}

// Budget returns the budget the Transport's retries are paid from, nil after
// WithoutBudget: by default a budget.PerHost of its own, which a gauge can read.
func (t *Transport) Budget() budget.Budget { return t.ready().budget }

// Attempts reports how many times the request that produced resp was
// sent: its attempts, hedges included, and the sends the base transport
// made again on its own (RetryEvent.BaseResend) of the attempts traced:
// every attempt of a Transport with a hook or a logger that writes INFO or
// below, or of a request that may be hedged, and otherwise retries and
// attempts to a host that failed lately (see docs/observability.md). A
// traced attempt counts once its request was written to a connection: a
// hedge cancelled while it dialled, or waited for a connection, never
// left, and does not count. It is 1 unless resp came from a Transport
// that retried, hedged or saw its base send again. It counts up to the
// response headers: each resume of the body after them (WithResume) is a
// request more, which the retry hooks see as a RetryEvent with Resume
// set, so that the server received Attempts plus the resumes.
func Attempts(resp *http.Response) int {
	if resp == nil || resp.Request == nil {
		return 1
	}
	ctx := resp.Request.Context()
	if n, ok := hedging.Sent(ctx); ok {
		return n
	}
	return attempt.Number(ctx)
}

// RoundTrip sends req through the base transport, retrying as the Transport
// is configured to. It implements http.RoundTripper: it never modifies req,
// and closes req.Body exactly once, on every path. A request that is a
// retry or a hedge of another Transport (its context says so: a Transport
// under a wrapper WithBase could not see through) is sent once, and the
// log says so at DEBUG; nor is an outcome that such a Transport under the
// base retried already (Attempts, or an *Error's, says more sends than
// this Transport made) retried again.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.base == nil {
		return t.ready().RoundTrip(req) // a zero Transport
	}
	if req != nil && req.URL != nil && req.Header != nil {
		if n := attempt.Number(req.Context()); n > 1 {
			// A retry or a hedge of another Transport, which WithBase
			// could not see under a wrapper: it retries, this one sends.
			t.log().Inner(req, n)
			return t.send(req)
		}
	}
	if plain, stamp := t.plain(req); plain {
		a := req
		if stamp {
			left, timely := t.snd.TimeToSend(req.Context())
			if !timely {
				return t.roundTrip(req, nil, nil, false) // which refuses it
			}
			a = t.stamped(req, left)
		}
		resp, err := t.send(a)
		if err == nil && !t.holdsStream(resp) && t.doneAtOnce(req, resp) {
			if resumeCandidate(t, resp) {
				s := retryState{t: t, req: req, attempt: 1, header: req.Header}
				s.offerResume(req, nil, resp)
			}
			return resp, nil
		}
		return t.roundTrip(req, resp, err, true)
	}
	return t.roundTrip(req, nil, nil, false)
}

// roundTrip is RoundTrip; when firstSent is true, the first attempt was
// req itself, and ended in resp0 or err0.
func (t *Transport) roundTrip(req *http.Request, resp0 *http.Response, err0 error, firstSent bool) (*http.Response, error) {
	if err := conns.CheckRequest(req); err != nil {
		if req != nil && req.Body != nil {
			req.Body.Close()
		}
		return nil, &Error{Err: err}
	}
	left, timely := t.snd.TimeToSend(req.Context()) // the first attempt's deadline headers
	if !timely {
		return t.refuseFirst(req, left)
	}
	var s retryState
	if p, ok := s.start(t, req); !ok {
		return t.shed(req, p)
	}
	s.left = left
	next := s.body.First(req) // the next attempt's body
	if !firstSent && t.snd.Pacer != nil {
		if err := s.awaitTurn(req.Context(), 1); err != nil {
			closeBody(next)
			s.body.Done()
			s.reportGiveUp(req, GiveUpEvent{Request: req, Reason: waitReason(err), Err: err}, 0)
			layer.MarkGaveUp(req.Context())
			return nil, &Error{Err: err}
		}
	}
	for {
		a, g := s.request(next)
		var resp *http.Response
		var err error
		var pt *evidence.Trace
		switch {
		case firstSent:
			resp, err, firstSent = resp0, err0, false
		case s.hedges():
			// A request that may be hedged is traced whenever it can
			// be: its call holds the trace, at no allocation of its
			// own, and net/http's resends of it are counted.
			r := t.hedge.SendFirst((*hedgeEnv)(t), req, a, s.p.maxAttempts, t.peers)
			resp, a, pt, s.attempt, s.spent, err = r.Resp, r.A, r.PT, r.Sent, r.Spent, r.Err
			s.unsent += r.Unsent
			s.countResends(r.First)
			for _, h := range r.Hedges {
				s.countResends(h)
			}
		default:
			a, pt, resp, err = s.send(a, g)
			g.Returned()
		}
		if err != nil && g.StoppedResend() {
			err = errors.Join(ErrResendStopped, err)
		}
		var held *http.Response // a stream whose body failed before its first event
		if err == nil && t.holdsStream(resp) {
			if f := s.holdStream(a, resp); f != nil {
				held, resp, err = resp, nil, f
			}
		}

		v := s.judge(a, resp, err)
		if held != nil && v.Decision != classify.Retry {
			resp, err = held, nil // what a plain transport gives: the response, its body failing
		}
		if v.Decision != classify.Retry {
			if err != nil || layer.Failure(resp.StatusCode) {
				layer.MarkGaveUp(req.Context())
			} else if healthy(resp) {
				s.succeed()
				t.conns.Succeeded(pt)
			}
			return s.finish(a, pt, resp, err, g)
		}
		delay, reason := s.plan(a, resp, err, v, g)
		if reason == "" && s.retriedBelow(resp, err) {
			// Another retryhttp Transport under a wrapper that WithBase
			// could not see through has retried this outcome: its
			// retries count as this one's.
			t.log().Retried(a, s.attempt)
			reason = GiveUpAttemptsExhausted
		}
		if reason == "" {
			var berr error
			if next, berr = s.body.Next(); berr != nil {
				reason = GiveUpBodyNotReplayable
			} else if t.throttle != nil && !t.throttle.Retry(s.th) {
				closeBody(next)
				reason = GiveUpThrottled
			} else if !s.pay(v) {
				closeBody(next)
				reason = GiveUpBudgetExhausted
			}
		}
		if reason != "" {
			if held != nil {
				resp, err = held, nil
			}
			return s.giveUp(a, pt, reason, delay, resp, err, v, g)
		}
		t.notify(s.retryEvent(delay, resp, err, v, pt.Peer()))
		if held != nil {
			held.Body.Close()
		}
		s.release(resp, bodyOf(resp), err, v, pt)
		g.End()
		if werr := s.wait(req.Context(), delay); werr != nil {
			closeBody(next)
			s.body.Done()
			s.reportGiveUp(a, s.giveUpEvent(waitReason(werr), resp, err, v, pt.Peer()), 0)
			if err != nil {
				werr = errors.Join(werr, err)
			}
			return nil, &Error{Attempts: s.sent(), Err: werr}
		}
		s.next(delay)
	}
}

// retriedBelow reports whether the outcome of the current attempt, resp
// or err, is that of another Transport's retries: it says more sends than
// this Transport made of the attempt (Attempts, or an *Error's). Nothing
// else makes the count of a response, or an *Error, say more: a base's
// own resends are counted by this Transport, and added after this.
func (s *retryState) retriedBelow(resp *http.Response, err error) bool {
	if resp != nil {
		return Attempts(resp) > s.attempt
	}
	var e *Error
	return errors.As(err, &e) && e.Attempts > 1
}

// healthy reports whether resp, whose status is not one by which a
// dependency fails (408, 429, 5xx), shows a healthy dependency, which
// refills the retry budget: a success, or a response the server did not
// mark as not to be retried, as an overloaded layer above a failure does.
func healthy(resp *http.Response) bool {
	return resp.StatusCode < 300 || wire.ParseSignal(resp.Header[wire.ShouldRetryHeader]) != wire.SignalFinal
}

// closeBody closes a retry's body that will not be sent.
func closeBody(b io.ReadCloser) {
	if b != nil {
		b.Close()
	}
}

// A policy is how one request is retried: the Transport's options with the
// caller's overrides applied.
type policy struct {
	maxAttempts int  // at least 1 once set
	resendable  bool // declared safe to send more than once
	noHedge     bool // NoHedge
	noResume    bool // NoResume
}

// policy returns the policy of req.
func (t *Transport) policy(req *http.Request) policy {
	co := callOptionsFrom(req.Context())
	p := policy{maxAttempts: t.maxAttempts, resendable: co.resendable, noHedge: co.noHedge, noResume: co.noResume}
	if co.maxAttempts > 0 {
		p.maxAttempts = co.maxAttempts
	}
	if !p.resendable && t.resendable != nil && !wire.IdempotentMethod(req.Method) {
		p.resendable = t.resendable(req)
	}
	return p
}

// finish returns the last attempt's result to the caller, releasing the
// request's body and the attempt's guard once they are no longer used, and
// offering to resume the response body, if it may be resumed, should it
// fail after the headers.
func (s *retryState) finish(a *http.Request, pt *evidence.Trace, resp *http.Response, err error, g *guard.Guard) (*http.Response, error) {
	s.body.Done()
	if err != nil {
		g.End()
		return nil, &Error{Attempts: s.sent(), Err: err}
	}
	held := s.t.streamWait > 0 && isHeld(resp.Body)
	if g != nil {
		// The body is read in the attempt's context: end it on Close.
		resp.Body = g.Wrap(resp.Body)
	}
	if s.sent() > 1 && resp.Request == nil {
		resp.Request = a
	}
	if s.resent > 0 || s.unsent > 0 {
		hedging.WithSent(resp, s.sent())
	}
	switch {
	case held:
		s.offerStream(a, resp)
	case resumeCandidate(s.t, resp):
		s.offerResume(a, pt, resp)
	}
	return resp, nil
}

// notify tells the hook and the logger about a retry about to be made, or
// a resume of a response body.
func (t *Transport) notify(e RetryEvent) {
	if t.onRetry != nil {
		t.onRetry(e)
	}
	t.logRetry(e)
}

// plain reports whether req's first attempt is req itself, sent as it is,
// with nothing prepared for a retry: a valid request that may be sent
// twice (its method is idempotent or it carries an idempotency key),
// without a body or with a GetBody of http.NewRequest's, through a
// Transport that neither numbers, hedges nor throttles attempts, nor
// traces their connections (every attempt's, or those of a host that
// failed lately), to a host not paced. stamp reports that its attempt
// carries its deadline in headers, and so is a copy of it (stamped).
func (t *Transport) plain(req *http.Request) (plain, stamp bool) {
	// t.shaped: the attempts are numbered, hedged, throttled or all traced.
	if req == nil || req.URL == nil || req.Header == nil || t.shaped {
		return false, false
	}
	if t.conns.Traces(req) || t.snd.Paces(req) || t.traceLog && t.logsAttempts(req) {
		return false, false
	}
	if req.Body != nil && req.Body != http.NoBody && (req.GetBody == nil || !replay.FreshBodies(req.GetBody)) {
		return false, false
	}
	if !wire.IdempotentMethod(req.Method) && !wire.HasIdempotencyKey(req.Header) {
		return false, false
	}
	return true, t.deadlineHeaders != nil && sender.HasDeadline(req.Context())
}

// stamped returns the first attempt of req, a plain request, with left in
// its deadline headers: a copy of req, with a copy of its header: the
// attempt (its request, context and header values), and the header's map,
// which Go's maps make in two allocations.
func (t *Transport) stamped(req *http.Request, left time.Duration) *http.Request {
	s := &stampedAttempt{}
	s.ctx.Set(req.Context(), left)
	s.req = *req.WithContext(&s.ctx)
	s.req.Header = s.stamp.Header(req.Header, false, t.deadlineHeaders, left)
	return &s.req
}

// A stampedAttempt is the first attempt of a plain request with deadline
// headers.
type stampedAttempt struct {
	req   http.Request
	ctx   deadlinefmt.SentContext
	stamp deadlines.Stamp
}

// doneAtOnce reports whether resp, the response to the plain first attempt
// req, ends the request as a success the default classifier would not
// retry, and refills the budget as such a success does.
func (t *Transport) doneAtOnce(req *http.Request, resp *http.Response) bool {
	if resp.StatusCode >= 300 {
		return false
	}
	if !t.plainClassifier {
		return false
	}
	if t.budget != nil {
		t.deposit(req, 0)
	}
	return true
}
