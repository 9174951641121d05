package retryhttp

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"time"

	"github.com/hashicorp/go-cleanhttp"
)

// drainLimit bounds how much of a discarded response body is read so that
// its connection can be reused, and drainTimeout how long that may take. A
// longer or slower body is closed unread, which costs that connection but
// never unbounded reading or waiting.
const (
	drainLimit   = 4 << 10
	drainTimeout = 100 * time.Millisecond
)

// A Transport is an http.RoundTripper that retries failed attempts of a
// request through a base RoundTripper, when retrying is safe and worthwhile:
//
//   - the outcome is transient (the Classifier says Retry);
//   - the request may be sent again (its method is idempotent, it carries an
//     Idempotency-Key, it is declared resendable with WithResendable or
//     Resendable, or the failure proves it never reached the server) and
//     its body can be replayed;
//   - attempts remain (WithMaxAttempts, or MaxAttempts for one call), the
//     wait fits the request's deadline and any Retry-After within its
//     limit, and the Budget pays for the retry.
//
// Otherwise it returns exactly what the base returned for the last attempt:
// the response, even a 503, with its body unread and a nil error, or, when no
// response exists, an *Error wrapping the last error.
//
// A Transport is immutable once New returns it and is safe for concurrent
// use by many goroutines. The zero Transport has no base and cannot send:
// make one with New. Most callers want
//
//	client := &http.Client{Transport: retryhttp.New()}
type Transport struct {
	base            http.RoundTripper
	maxAttempts     int
	backoff         Backoff
	throttleBackoff Backoff
	classifier      Classifier
	budget          Budget // nil: retries are not budgeted
	retryAfterLimit time.Duration
	attemptTimeout  time.Duration
	bodyBufferLimit int64
	autoKeys        bool
	attemptHeader   string
	rateLimitHints  bool
	onRetry         func(RetryEvent)
	onGiveUp        func(GiveUpEvent)
	onHedge         func(HedgeEvent)
	resendable      func(*http.Request) bool
	hedge           *hedging // nil: no hedging
	throttle        *throttling
	logger          *slog.Logger
	peers           bool             // each attempt's connection is traced
	deadlineHeaders []DeadlineFormat // nil: no deadline is sent
	answers         *latencyTable    // hosts' answer times, when hedging does not keep them
	noFitCheck      bool             // in-package tests turn the check before a retry off
	shaped          bool             // attempts are numbered, hedged, throttled or traced: none is plain

	// now and rand are the clock and the random source of jitter, uniform in
	// [0, 1). In-package tests replace them.
	now  func() time.Time
	rand func() float64
}

var _ http.RoundTripper = (*Transport)(nil)

// New returns a Transport configured by opts over the defaults listed in the
// package documentation. It panics, naming the option, when an option's
// value is invalid.
func New(opts ...Option) *Transport {
	t := &Transport{
		maxAttempts:     DefaultMaxAttempts,
		backoff:         DefaultBackoff(),
		throttleBackoff: DefaultThrottleBackoff(),
		classifier:      DefaultClassifier(),
		budget:          NewHostBudget(),
		retryAfterLimit: DefaultRetryAfterLimit,
		bodyBufferLimit: DefaultBodyBufferLimit,
		now:             time.Now,
		rand:            rand.Float64,
	}
	for _, o := range opts {
		if o == nil {
			panic("retryhttp: New: nil Option")
		}
		o(t)
	}
	if t.base == nil {
		t.base = defaultBase()
	}
	t.peers = tracesPeers(t)
	t.answers = answerTable(t)
	t.shaped = t.attemptHeader != "" || t.hedge != nil || t.throttle != nil || t.peers
	return t
}

// defaultIdlePerHost is how many idle connections the default base keeps
// per host.
const defaultIdlePerHost = 100

// defaultBase returns go-cleanhttp's pooled transport, keeping as many idle
// connections per host as in all (100). Its own per-host default,
// GOMAXPROCS+1, closes the connections of concurrent callers as soon as they
// finish, so a struggling dependency would see a new connection, and
// perhaps a TLS handshake, for most requests just when it can least afford
// them.
func defaultBase() *http.Transport {
	base := cleanhttp.DefaultPooledTransport()
	base.MaxIdleConnsPerHost = defaultIdlePerHost
	base.DialContext = NewDialer().DialContext
	reportProxyRefusals(base, true)
	return base
}

// CloseIdleConnections closes the base transport's idle connections, if it
// has a CloseIdleConnections method, so that http.Client.CloseIdleConnections
// reaches the connection pool.
func (t *Transport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// Budget returns the budget the Transport's retries are paid from, nil after
// WithoutBudget: by default a HostBudget of its own, which a gauge can read.
func (t *Transport) Budget() Budget { return t.budget }

// An Error reports a request that ended without any response: every attempt
// failed with an error, or the request could not be sent. Unwrap returns the
// last attempt's error, so errors.Is and errors.As see through it.
type Error struct {
	// Attempts is how many attempts were sent, 0 when none was.
	Attempts int
	// Err is the last attempt's error.
	Err error
}

// Error describes the failure: the attempts sent and the last attempt's
// error.
func (e *Error) Error() string {
	s := " attempts: "
	if e.Attempts == 1 {
		s = " attempt: "
	}
	return "retryhttp: " + strconv.Itoa(e.Attempts) + s + e.Err.Error()
}

// Unwrap returns the last attempt's error.
func (e *Error) Unwrap() error { return e.Err }

// Timeout reports whether the last attempt's error was a timeout, as
// net.Error does, so that url.Error.Timeout keeps working through an *Error.
func (e *Error) Timeout() bool {
	var t interface{ Timeout() bool }
	return errors.As(e.Err, &t) && t.Timeout()
}

// Attempts reports how many attempts were sent for the request that
// produced resp, hedges included: 1 unless resp came from a Transport that
// retried or hedged.
func Attempts(resp *http.Response) int {
	if resp == nil || resp.Request == nil {
		return 1
	}
	ctx := resp.Request.Context()
	if n, ok := ctx.Value(sentKey{}).(int); ok {
		return n
	}
	if n, ok := ctx.Value(attemptKey{}).(int); ok {
		return n
	}
	return 1
}

// attemptKey is the context key under which a retry's request carries its
// attempt number.
type attemptKey struct{}

// RoundTrip sends req through the base transport, retrying as the Transport
// is configured to. It implements http.RoundTripper: it never modifies req,
// and closes req.Body exactly once, on every path.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.plain(req) {
		resp, err := t.send(req)
		if err == nil && t.doneAtOnce(req, resp) {
			return resp, nil
		}
		return t.roundTrip(req, resp, err, true)
	}
	return t.roundTrip(req, nil, nil, false)
}

// roundTrip is RoundTrip; when firstSent is true, the first attempt was
// req itself, and ended in resp0 or err0.
func (t *Transport) roundTrip(req *http.Request, resp0 *http.Response, err0 error, firstSent bool) (*http.Response, error) {
	if err := checkRequest(req); err != nil {
		if req != nil && req.Body != nil {
			req.Body.Close()
		}
		return nil, &Error{Err: err}
	}
	left, timely := t.timeToSend(req.Context()) // the first attempt's deadline headers
	if !timely {
		return t.refuseFirst(req, left)
	}
	var th *hostThrottle
	if t.throttle != nil {
		var p float64
		var ok bool
		if th, p, ok = t.throttle.admit(t, req); !ok {
			return t.shed(req, p)
		}
	}
	ctx := req.Context()
	hasBody := req.Body != nil && req.Body != http.NoBody
	// The caller's overrides are read at once only when they change how the
	// first attempt is sent; for a request without a body whose method is
	// idempotent, only once a retry is considered, so that a success costs
	// nothing.
	idempotent := idempotentMethod(req.Method)
	var p policy
	if hasBody || !idempotent || t.attemptHeader != "" || t.hedge != nil {
		p = t.policy(req)
	}
	var body replay // the zero replay sends no body
	if hasBody {
		body.prepare(req, t.bodyBufferLimit, p.maxAttempts > 1)
	}
	header, keyed := req.Header, false
	if t.autoKeys && !p.resendable && !idempotent && !hasIdempotencyKey(header) {
		header, keyed = header.Clone(), true
		header.Set(IdempotencyKeyHeader, newIdempotencyKey())
	}
	// A request that may not be sent twice is guarded on every attempt:
	// the base must not resend it on its own, and only a guard can prove
	// that an attempt never reached the server.
	guarded, header := guardHeader(header, !p.resendable && !idempotent)

	var (
		spent   Tokens            // what the budget took for the current retry
		prev    time.Duration     // the previous retry's delay
		next    = body.first(req) // the next attempt's body
		attempt = 1
		failed  []netip.AddrPort // where earlier attempts failed, for a Dialer
		retire  bool             // an HTTP/2 attempt failed: retries retire their connection
	)
	for {
		a := req
		var g *guard
		if attempt > 1 || body.modifies() || keyed || guarded || t.attemptHeader != "" || left > 0 {
			actx := ctx
			if attempt > 1 {
				actx = context.WithValue(ctx, attemptKey{}, attempt)
				if len(failed) > 0 {
					actx = context.WithValue(actx, failedKey{}, failed)
				}
			}
			if left > 0 {
				actx = withSentDeadline(actx, left)
			}
			if guarded {
				g, actx = startGuard(actx)
			}
			a = g.request(req, actx)
			if retire {
				// An HTTP/2 connection carries other requests too: the
				// retry marks the one it is sent on as not to be reused.
				a.Close = true
			}
			a.Header = header
			if t.attemptHeader != "" {
				a.Header = header.Clone()
				a.Header.Set(t.attemptHeader, attemptHeaderValue(attempt, p.maxAttempts))
			}
			if left > 0 {
				a.Header = t.deadlineHeader(a.Header, t.attemptHeader != "", left)
			}
			body.setBody(a, next, !guarded)
			if guarded {
				// net/http resends a request with a body by itself only
				// through GetBody: give it one for the resend that proves
				// nothing was sent, and none after any other failure.
				a.GetBody = body.rewindBody(req.GetBody)
			}
		}
		var resp *http.Response
		var err error
		var pt *peerTrace
		if firstSent {
			resp, err, firstSent = resp0, err0, false
		} else if attempt == 1 && t.hedge != nil && !guarded && hedgeable(req, idempotent, hasBody, p) {
			var sent int
			var took Tokens
			resp, a, sent, took, err = t.sendFirstHedged(req, a, p)
			attempt, spent = sent, took
		} else {
			if t.peers {
				var refuse []netip.AddrPort
				if g == nil && (a.Body == nil || a.Body == http.NoBody || a.GetBody != nil) {
					refuse = failed
				}
				a, pt = tracePeer(a, refuse)
			}
			resp, err = t.send(a)
		}
		if err != nil && g.stoppedResend() {
			err = errors.Join(ErrBaseResend, err)
		}

		v := t.classify(a, resp, err)
		if t.throttle != nil {
			t.throttle.record(t, th, req, err, v, attempt)
		}
		if v.Decision != Retry {
			if err != nil || failureStatus(resp.StatusCode) {
				markGaveUp(ctx)
			} else if t.budget != nil && healthy(resp) {
				t.deposit(req, spent)
			}
			return t.finish(resp, err, attempt, a, &body, g)
		}
		if p.maxAttempts == 0 {
			p = t.policy(req)
		}
		delay, reason := t.plan(a, resp, err, attempt, prev, v, g, p)
		if reason != "" {
			return t.giveUp(req, a, pt, attempt, reason, resp, err, v, &body, g)
		}
		nb, berr := body.next()
		if berr != nil {
			return t.giveUp(req, a, pt, attempt, GiveUpBodyNotReplayable, resp, err, v, &body, g)
		}
		if t.budget != nil {
			took, berr := t.budget.Withdraw(req, v)
			if berr != nil {
				closeBody(nb)
				return t.giveUp(req, a, pt, attempt, GiveUpBudgetExhausted, resp, err, v, &body, g)
			}
			spent = took
		}

		peer := pt.peer()
		t.notify(req, attempt, delay, resp, err, v, peer)
		leave := err != nil || instanceFailure(resp, v)
		if resp != nil && leave {
			// Closed unread, the body takes its connection with it.
			resp.Body.Close()
			pt.retire(resp)
			retire = retire || resp.ProtoMajor == 2
		} else if resp != nil {
			discard(resp)
		} else if leave {
			retire = retire || pt.multiplexed()
		}
		if leave && peer.IsValid() {
			failed = append(failed, peer)
		}
		g.end()
		var werr error
		if left, werr = t.waitToSend(req, attempt+1, delay); werr != nil {
			closeBody(nb)
			body.done()
			if t.budget != nil && spent > 0 {
				// The retry was paid for but never sent.
				t.budget.Deposit(req, spent)
			}
			t.reportGiveUp(req, attempt, waitReason(werr), resp, err, v, peer)
			if err != nil {
				werr = errors.Join(werr, err)
			}
			return nil, &Error{Attempts: attempt, Err: werr}
		}
		next, prev = nb, delay
		attempt++
	}
}

// healthy reports whether resp, whose status is not one by which a
// dependency fails (408, 429, 5xx), shows a healthy dependency, which
// refills the retry budget: a success, or a response the server did not
// mark as not to be retried, as an overloaded layer above a failure does.
func healthy(resp *http.Response) bool {
	return resp.StatusCode < 300 || parseSignal(resp.Header[ShouldRetryHeader]) != signalFinal
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
}

// policy returns the policy of req.
func (t *Transport) policy(req *http.Request) policy {
	co := callOptionsFrom(req.Context())
	p := policy{maxAttempts: t.maxAttempts, resendable: co.resendable, noHedge: co.noHedge}
	if co.maxAttempts > 0 {
		p.maxAttempts = co.maxAttempts
	}
	if !p.resendable && t.resendable != nil && !idempotentMethod(req.Method) {
		p.resendable = t.resendable(req)
	}
	return p
}

// giveUp ends the retries of req, whose last attempt, a, failed in a way
// worth retrying with verdict v, for the given reason: it logs the reason,
// reports it to the give-up hooks, tells a Handler serving the request that
// a dependency was given up on, and returns the last result.
func (t *Transport) giveUp(req, a *http.Request, pt *peerTrace, attempt int, reason GiveUpReason, resp *http.Response, err error, v Verdict, body *replay, g *guard) (*http.Response, error) {
	peer := pt.peer()
	t.logGiveUp(a, attempt, reason, resp, err, peer)
	t.reportGiveUp(req, attempt, reason, resp, err, v, peer)
	markGaveUp(a.Context())
	return t.finish(resp, err, attempt, a, body, g)
}

// failureStatus reports the statuses by which a dependency fails in a way a
// caller might retry: 408, 429 and 5xx.
func failureStatus(code int) bool {
	return code == http.StatusRequestTimeout || code == http.StatusTooManyRequests || (code >= 500 && code <= 599)
}

// checkRequest rejects requests no transport can send, before any attempt.
func checkRequest(req *http.Request) error {
	switch {
	case req == nil:
		return errors.New("nil Request")
	case req.URL == nil:
		return errors.New("nil Request.URL")
	case req.Header == nil:
		return errors.New("nil Request.Header")
	}
	return nil
}

// checkResult enforces the RoundTripper contract on the base's result.
func checkResult(resp *http.Response, err error) (*http.Response, error) {
	switch {
	case err != nil && resp != nil:
		if resp.Body != nil {
			resp.Body.Close()
		}
		return nil, err
	case err == nil && resp == nil:
		return nil, errors.New("base RoundTripper returned a nil response and a nil error")
	case resp != nil && resp.Body == nil:
		resp.Body = http.NoBody
	}
	return resp, err
}

// plan decides whether the failed attempt a is retried and after what
// delay. It returns a non-empty reason when it is not.
func (t *Transport) plan(a *http.Request, resp *http.Response, err error, attempt int, prev time.Duration, v Verdict, g *guard, p policy) (time.Duration, GiveUpReason) {
	if attempt >= p.maxAttempts {
		return 0, GiveUpAttemptsExhausted
	}
	if !p.resendable && !mayResend(a.Method, a.Header, err, g) {
		return 0, GiveUpNotResendable
	}
	b := t.backoff
	if v.Throttle {
		b = t.throttleBackoff
	}
	delay := max(b(attempt, prev, t.rand()), 0)
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
			if reset, ok := rateLimitReset(h, now); ok {
				if reset > t.retryAfterLimit {
					return 0, GiveUpRateLimitResetLimit
				}
				delay = max(delay, reset)
			}
		}
	}
	if !t.retryFits(a, now, delay) {
		return 0, GiveUpDeadline
	}
	return delay, ""
}

// finish returns the last attempt's result to the caller, releasing the
// request's body and the attempt's guard once they are no longer used.
func (t *Transport) finish(resp *http.Response, err error, attempt int, a *http.Request, body *replay, g *guard) (*http.Response, error) {
	body.done()
	if err != nil {
		g.end()
		return nil, &Error{Attempts: attempt, Err: err}
	}
	if g != nil {
		// The body is read in the attempt's context: end it on Close.
		resp.Body = g.wrap(resp.Body)
	}
	if attempt > 1 && resp.Request == nil {
		resp.Request = a
	}
	return resp, nil
}

// instanceFailure reports whether resp, an attempt about to be retried
// with verdict v, failed in a way that may belong to the instance of the
// service that served it (a 5xx), so that the retry should go elsewhere: its
// connection is closed rather than pooled, since behind a balancer that pins
// each connection to one instance (a Kubernetes Service, a network load
// balancer) a retry sent down it again meets the same instance. A throttled
// response (429, 503 with Retry-After) keeps its connection: the server
// answered as it meant to and asked for less load, not for another
// connection, and its quota is seldom the instance's alone.
func instanceFailure(resp *http.Response, v Verdict) bool {
	return resp != nil && resp.StatusCode >= 500 && !v.Throttle
}

// discard drains a little of a response that will not be returned, so its
// connection can be reused, and closes it. A body that stalls is closed
// after drainTimeout, which ends a blocked read in net/http's bodies.
func discard(resp *http.Response) {
	stop := time.AfterFunc(drainTimeout, func() { resp.Body.Close() })
	_, _ = io.CopyN(io.Discard, resp.Body, drainLimit)
	if stop.Stop() {
		resp.Body.Close()
	}
}

// wait sleeps for d or until ctx is done, whichever comes first.
func wait(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// notify tells the hook and the logger about a retry about to be made.
func (t *Transport) notify(req *http.Request, attempt int, delay time.Duration, resp *http.Response, err error, v Verdict, peer netip.AddrPort) {
	status := 0
	if resp != nil {
		status = resp.StatusCode
	}
	left := t.leftAfter(req, delay)
	if t.onRetry != nil {
		t.onRetry(RetryEvent{Request: req, Attempt: attempt, Delay: delay, StatusCode: status, Err: err, Verdict: v, Peer: peer, TimeLeft: left})
	}
	if t.logger != nil && t.logger.Enabled(req.Context(), slog.LevelDebug) {
		t.logger.LogAttrs(req.Context(), slog.LevelDebug, "retryhttp: retrying",
			appendTimeLeft(append(requestAttrs(req, attempt, resp, err, peer), slog.Duration("delay", delay)), left)...)
	}
}

// logGiveUp logs a retryable failure that is not retried, and why.
func (t *Transport) logGiveUp(req *http.Request, attempt int, reason GiveUpReason, resp *http.Response, err error, peer netip.AddrPort) {
	if t.logger != nil && t.logger.Enabled(req.Context(), slog.LevelDebug) {
		t.logger.LogAttrs(req.Context(), slog.LevelDebug, "retryhttp: not retrying",
			t.appendDeadlineFacts(append(requestAttrs(req, attempt, resp, err, peer), slog.String("reason", string(reason))), req, reason)...)
	}
}

// requestAttrs describes an attempt for the log without headers, user
// information or query strings, which may hold secrets, and with the
// connection's remote address when it is known.
func requestAttrs(req *http.Request, attempt int, resp *http.Response, err error, peer netip.AddrPort) []slog.Attr {
	u := url.URL{Scheme: req.URL.Scheme, Host: req.URL.Host, Path: req.URL.Path}
	if u.Host == "" {
		u.Host = req.Host
	}
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	attrs := []slog.Attr{
		slog.String("method", method),
		slog.String("url", u.String()),
		slog.Int("attempt", attempt),
	}
	if resp != nil {
		attrs = append(attrs, slog.Int("status", resp.StatusCode))
	}
	if peer.IsValid() {
		attrs = append(attrs, slog.String("network.peer.address", peer.Addr().String()), slog.Int("network.peer.port", int(peer.Port())))
	}
	if err != nil {
		// A *url.Error's message repeats the URL, query string included.
		var uerr *url.Error
		for errors.As(err, &uerr) {
			err = uerr.Err
		}
		attrs = append(attrs, slog.String("error", err.Error()))
	}
	return attrs
}
