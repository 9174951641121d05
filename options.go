package retryhttp

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/retryhttp/retryhttp/backoff"
	"github.com/retryhttp/retryhttp/budget"
	"github.com/retryhttp/retryhttp/classify"
	"github.com/retryhttp/retryhttp/deadline"
	"github.com/retryhttp/retryhttp/hedge"
	"github.com/retryhttp/retryhttp/internal/conns"
	"github.com/retryhttp/retryhttp/internal/deadlinefmt"
	"github.com/retryhttp/retryhttp/internal/wire"
	"github.com/retryhttp/retryhttp/pace"
	"github.com/retryhttp/retryhttp/throttle"
)

// Defaults used by New; the package documentation tabulates every default
// with its reason.
const (
	defaultMaxAttempts     = 3                 // attempts, the first included
	defaultRetryAfterLimit = time.Minute       // the longest Retry-After waited for
	defaultBodyBufferLimit = 1 << 20           // bytes of a body without GetBody kept to resend it
	idempotencyKeyHeader   = "Idempotency-Key" // the header WithIdempotencyKeys sets
)

// An Option configures a Transport. Options are applied in order by New; an
// invalid value panics there with a message naming the option, and so do
// options that contradict each other (WithBudget with WithoutBudget,
// WithResume with WithoutResume) or of which one makes another do nothing
// (WithHedging with WithMaxAttempts(1)), and WithBase or WithLogger given
// twice, which would drop the earlier base or logger. A feature's options
// given in several calls (WithResume, WithHedging, WithAdaptiveThrottling,
// WithDeadlineHeader, WithPacing) add up field by field: a later call
// overrides only the fields it sets; hooks (WithOnRetry, WithOnGiveUp,
// WithOnHedge, WithOnPace) add up, each called in turn; and of a value
// given twice (WithMaxAttempts, WithBackoff, WithBudget and the other
// settings of one value), the later counts, so that options may follow
// defaults of one's own.
type Option func(*Transport)

// WithBase sets the transport that makes each attempt: an SDK's transport,
// an instrumented one (otelhttp), an authenticating one (oauth2). The
// default is go-cleanhttp's pooled transport, keeping up to 100 idle
// connections per host, with a TLS session cache of 64 hosts. A 421's
// retry dials a new connection through a clone of an *http.Transport base;
// through another base, a 421 is returned.
//
// Given twice, it panics in New: a Transport has one base. It panics if
// rt is a Transport of this package, directly or under
// wrappers whose Unwrap method leads to one, however deep: its retries
// would multiply this one's (3 attempts over 3 send a GET 9 times). Under
// a wrapper without Unwrap, which New cannot see through, the Transport
// below sends each retry and hedge of the one above once, as its base
// would: 5 sends at most for two of 3 attempts. Wrap an
// *http.Client's Transport, never the client. An *http.Transport with a
// Proxy is used through a clone of it that reports a proxy's refusal of a
// CONNECT as a *classify.ProxyConnectError, retried; the caller's
// transport is never modified.
func WithBase(rt http.RoundTripper) Option {
	if rt == nil {
		panic("retryhttp: WithBase: nil RoundTripper")
	}
	if stacked(rt) {
		panic("retryhttp: WithBase: the base is a retryhttp Transport, directly or through Unwrap: its retries would multiply this one's")
	}
	rt = conns.ReportProxyRefusals(rt, false)
	return func(t *Transport) { t.setOnce(setBase, "WithBase"); t.base = rt }
}

// WithMaxAttempts sets how many attempts a request gets, the first included.
// 1 disables retries. The default is 3. A send that the base makes again on
// its own (RetryEvent.BaseResend) is no attempt of the Transport's: Attempts
// counts it, the limit does not.
func WithMaxAttempts(n int) Option {
	if n < 1 {
		panic("retryhttp: WithMaxAttempts: attempts must be at least 1, got " + strconv.Itoa(n))
	}
	return func(t *Transport) { t.maxAttempts = n }
}

// WithBackoff sets the delay before each retry of an ordinary failure. The
// default is backoff.Default(): full jitter over exponential backoff from 50 ms,
// capped at 20 s.
func WithBackoff(b backoff.Func) Option {
	if b == nil {
		panic("retryhttp: WithBackoff: nil backoff.Func")
	}
	return func(t *Transport) { t.backoff = b }
}

// WithThrottleBackoff sets the delay before a retry of a throttled attempt
// (429, or 503 with Retry-After). The default is backoff.DefaultThrottle(): full
// jitter over exponential backoff from 1 s, capped at 20 s. A Retry-After
// header still sets the least delay.
func WithThrottleBackoff(b backoff.Func) Option {
	if b == nil {
		panic("retryhttp: WithThrottleBackoff: nil backoff.Func")
	}
	return func(t *Transport) { t.throttleBackoff = b }
}

// WithClassifier replaces the classifier that decides which outcomes are
// worth retrying. The default is classify.Default(); to extend it, chain
// your classifiers in front of it.
func WithClassifier(c classify.Classifier) Option {
	if c == nil {
		panic("retryhttp: WithClassifier: nil Classifier")
	}
	return func(t *Transport) { t.classifier = c }
}

// WithBudget sets the budget retries are paid from. Pass the same budget to
// several Transports to share it, or a *Bucket for one budget over all
// hosts. The default is a budget.NewPerHost() of the Transport's own: one bucket
// of 500 tokens per scheme and host, a retry costing 5.
func WithBudget(b budget.Budget) Option {
	if b == nil {
		panic("retryhttp: WithBudget: nil Budget (use WithoutBudget to retry without one)")
	}
	return func(t *Transport) { t.budget, t.given = b, t.given|givenBudget }
}

// WithoutBudget lets every retryable failure be retried, within the
// attempt limit, whatever the failure rate. It is meant for tests and for
// isolating backoff behaviour: in production a budget is what stops retries
// from multiplying the load on a dependency that is down.
func WithoutBudget() Option {
	return func(t *Transport) { t.budget, t.given = nil, t.given|givenNoBudget }
}

// WithRetryAfterLimit sets the longest Retry-After the Transport waits for.
// When a server asks for a longer wait (or a wait past the request's
// deadline), the Transport does not retry: it returns the response at once,
// its Retry-After header intact, for the caller to act on. The default is
// one minute.
func WithRetryAfterLimit(d time.Duration) Option {
	if d < 0 {
		panic("retryhttp: WithRetryAfterLimit: negative duration " + d.String())
	}
	return func(t *Transport) { t.retryAfterLimit = d }
}

// WithAttemptTimeout bounds each attempt, from sending the request to
// receiving the response headers. An attempt that runs out of time fails
// with an error wrapping ErrAttemptTimeout and is retried. The limit stops
// once the headers arrive: reading the returned body is bounded only by the
// request's own context, and closing the body releases the attempt. Zero,
// the default, sets no per-attempt limit.
func WithAttemptTimeout(d time.Duration) Option {
	if d < 0 {
		panic("retryhttp: WithAttemptTimeout: negative duration " + d.String())
	}
	return func(t *Transport) { t.attemptTimeout = d }
}

// WithBodyBufferLimit sets how many bytes of a request body the Transport
// copies, as the first attempt sends it, when the request has no GetBody, so
// that it can send the body again. Nothing is read ahead of the attempt. A
// retry resends the copy only if the first attempt sent the body whole; a
// longer body is sent once, with at most n bytes held in memory, and the
// request is not resent: a failure worth retrying is given up on
// (GiveUpBodyNotReplayable), which WithLogger logs at INFO, since the
// retries configured cannot happen. The default is 1 MiB; any n is safe, since the copy
// grows only with the bytes sent. Requests with GetBody (as http.NewRequest
// sets for bytes, strings and their readers) are never copied.
func WithBodyBufferLimit(n int64) Option {
	if n < 0 {
		panic("retryhttp: WithBodyBufferLimit: negative limit " + strconv.FormatInt(n, 10))
	}
	return func(t *Transport) { t.bodyBufferLimit = n }
}

// WithIdempotencyKeys gives every request whose method is not idempotent
// (POST, PATCH, ...) and that carries no Idempotency-Key or
// X-Idempotency-Key header a fresh random Idempotency-Key before its first
// attempt, and the same key on every retry, so that such requests may be
// retried. Use it only with servers that honour the header; a server that
// ignores it may execute the request more than once.
func WithIdempotencyKeys() Option {
	return func(t *Transport) { t.autoKeys = true }
}

// WithAttemptHeader sets the header name on every attempt, with the
// attempt's number and the most attempts there will be, as "2/3", so that
// servers and their logs can tell retries from first attempts. A common
// choice of name is "Retry-Attempt". The caller's request is not modified.
func WithAttemptHeader(name string) Option {
	if name == "" || !wire.ValidHeaderName(name) {
		panic("retryhttp: WithAttemptHeader: invalid header name " + strconv.Quote(name))
	}
	return func(t *Transport) { t.attemptHeader = http.CanonicalHeaderKey(name) }
}

// WithRateLimitHints makes the reset time of a server's rate limit a floor
// on the delay before retrying a throttled attempt (429, or 503 with
// Retry-After), as Retry-After is: the RateLimit header's reset parameter
// ("reset=N" or "t=N", seconds) or X-RateLimit-Reset (seconds, or Unix epoch
// seconds when 1,000,000,000 or more). A reset beyond the Retry-After limit
// ends the retries, returning the response. Hints on other responses are
// ignored: many servers send them with every response.
func WithRateLimitHints() Option {
	return func(t *Transport) { t.rateLimitHints = true }
}

// WithAdaptiveThrottling refuses, at once and without sending them, a share
// of the requests to a host that has been failing, so that callers fail
// fast and the host is not sent every request while it is down: the
// client-side throttling of Google's SRE book, over a sliding window (10 s
// by default), refusing at most 90% by default (package throttle). It is
// off by default.
//
// A refused request gets an *Error with no attempts wrapping ErrThrottled;
// the WithOnGiveUp hooks see it with reason GiveUpThrottled.
// Transport.Rejections reports the probabilities, for a gauge. Each
// Transport has counts of its own, unless shared with throttle.Shared.
// docs/throttling.md says the rest. Given more than once, its options add
// up, a later one overriding an earlier one.
func WithAdaptiveThrottling(opts ...throttle.Option) Option {
	noNil("WithAdaptiveThrottling", "throttle.Option", opts)
	return func(t *Transport) {
		t.throttleOpts = append(t.throttleOpts, opts...)
		t.given |= givenThrottling
	}
}

// A setting is an option that gives the Transport a component of the
// user's, which New refuses to be given twice (setOnce): the later would
// drop the earlier without a word.
type setting uint8

const (
	setBase setting = 1 << iota
	setLogger
)

// setOnce records that the setting s, the option name, was given, and
// panics if it was given before: two values for one setting are a
// mistake New reports, as it reports options that contradict each other,
// rather than keep one of them without a word.
func (t *Transport) setOnce(s setting, name string) {
	if t.settings&s != 0 {
		panic("retryhttp: New: " + name + " given twice: a Transport has one; give it once")
	}
	t.settings |= s
}

// given records the options whose combinations New refuses.
type given uint8

const (
	givenBudget given = 1 << iota
	givenNoBudget
	givenResume
	givenNoResume
	givenHedging
	givenThrottling
	givenPacing
	givenStreams
)

// check panics, as an invalid value does, when options that were given
// together contradict each other or one makes another do nothing.
func (g given) check(maxAttempts int) {
	switch {
	case g&givenBudget != 0 && g&givenNoBudget != 0:
		panic("retryhttp: New: WithBudget and WithoutBudget contradict each other")
	case g&givenResume != 0 && g&givenNoResume != 0:
		panic("retryhttp: New: WithResume and WithoutResume contradict each other")
	case g&givenHedging != 0 && maxAttempts == 1:
		panic("retryhttp: New: WithHedging does nothing with WithMaxAttempts(1): a hedge is an attempt")
	}
}

// callOptions are the overrides a caller gives one request through its
// context: Resendable, MaxAttempts, NoHedge and NoResume.
type callOptions struct {
	resendable  bool
	noHedge     bool
	noResume    bool
	maxAttempts int // 0: the Transport's
}

type callKey struct{}

func callOptionsFrom(ctx context.Context) callOptions {
	co, _ := ctx.Value(callKey{}).(callOptions)
	return co
}

func withCallOptions(ctx context.Context, change func(*callOptions)) context.Context {
	if ctx == nil {
		panic("retryhttp: nil Context")
	}
	co := callOptionsFrom(ctx)
	change(&co)
	return context.WithValue(ctx, callKey{}, co)
}

// Resendable returns a copy of ctx under which requests are safe to send
// more than once, as idempotent ones are: a read sent as a POST (an AWS
// JSON-protocol Get, a GraphQL query, a search), or a write the server
// deduplicates by some means of its own. Pass it to an SDK call, whose
// requests carry the call's context:
//
//	out, err := db.GetItem(retryhttp.Resendable(ctx), in)
//
// The other rules still apply: the attempts, the budget, the classifier,
// and a body without GetBody is resent only when the first attempt sent it
// whole within the buffer limit. Overrides given through the same context
// add up.
func Resendable(ctx context.Context) context.Context {
	return withCallOptions(ctx, func(co *callOptions) { co.resendable = true })
}

// MaxAttempts returns a copy of ctx under which requests get at most n
// attempts, the first included, whatever the Transport's WithMaxAttempts
// says. An n below 1 counts as 1. MaxAttempts(ctx, 1) is for a call that is
// retried at another layer, or whose caller would rather fail fast: its
// response body is not resumed either.
func MaxAttempts(ctx context.Context, n int) context.Context {
	return withCallOptions(ctx, func(co *callOptions) { co.maxAttempts = max(n, 1) })
}

// WithResendable declares which requests are safe to send more than once
// although their method is not idempotent and they carry no idempotency
// key, for users who know their API: fn reports true for those. For an AWS
// SDK client, every operation may be resent (the SDK's own retryer resends
// them all); for GraphQL, queries but not mutations. Such requests are
// retried as idempotent ones are, under the same attempts, budget,
// classifier and body rules. fn is called at most once per request, on the
// goroutine making it, with the caller's request, which it must not modify
// or read the body of; it must be safe for concurrent use. Resendable marks
// a single call instead.
func WithResendable(fn func(*http.Request) bool) Option {
	if fn == nil {
		panic("retryhttp: WithResendable: nil function")
	}
	return func(t *Transport) { t.resendable = fn }
}

// WithDeadlineHeader sends, with every attempt of a request whose context
// has a deadline, the time left before it when the attempt is sent, in
// each of the given formats, so that the service called can stop when its
// caller stops waiting (server.Deadline reads it). A retry, sent later,
// carries less. It is off by default. The caller's request is never
// modified, and a request without a deadline is sent as it is.
//
// An attempt with less than 1 ms left is not sent: a first attempt so
// refused ends the request with an *Error of no attempts wrapping
// ErrNoTimeLeft, given up on as GiveUpDeadline. docs/deadlines.md says the
// rest. It panics if no format is given or a format is not a valid header
// name. Given more than once, the formats add up: each is sent once.
func WithDeadlineHeader(formats ...deadline.Format) Option {
	formats = deadlinefmt.Check("retryhttp: WithDeadlineHeader", formats)
	return func(t *Transport) {
		for _, f := range formats {
			if !slices.Contains(t.deadlineHeaders, f) {
				t.deadlineHeaders = append(t.deadlineHeaders, f)
			}
		}
	}
}

// WithHedging sends another copy of a request, a hedge, when no attempt has
// had a response within a delay (by default the 95th percentile of the
// host's recent times to response headers, at most 5% of its requests
// hedged: package hedge), and returns whichever response comes first, so
// that a request that is merely slow does not hold its caller up. It is off
// by default.
//
// Only a request that may be sent twice is hedged, without a body or with
// GetBody: never a key-less POST. Every hedge counts as an attempt
// (WithMaxAttempts) and is paid from the retry budget; an empty budget or a
// spent cap sends no hedge and never fails the request. The first response
// that is a success or final wins; the others are cancelled, or drained a
// little and closed, before RoundTrip returns, but for those that have an
// HTTP/1 connection of their own, which a cancel would close: they are left
// to answer, their answers discarded, for 1 s at most (even once the
// caller's context ends), and are never sent again. NoHedge turns it off
// for one call; WithOnHedge sees each hedge; docs/hedging.md says the rest. Given
// more than once, its options add up, a later one overriding an earlier one.
func WithHedging(opts ...hedge.Option) Option {
	noNil("WithHedging", "hedge.Option", opts)
	return func(t *Transport) {
		t.given |= givenHedging
		t.hedgeOpts = append(t.hedgeOpts, opts...)
	}
}

// WithPacing sends each host that throttles (a 429, or a 503 with
// Retry-After) or announces a quota nearly spent the requests it accepts,
// at the rate it accepts them, learned from its throttles and read from
// the quota it announces, instead of collecting 429s. Each request, first
// attempt or retry, waits for its turn. It is off by default.
//
// A host that has not throttled waits for nothing. A request whose turn is
// further off than pace.MaxWait (10 s by default) or its deadline fails at
// once, never sent, with an *Error wrapping a *pace.Error, given up on as
// GiveUpPaced. WithOnPace sees each wait; package pace and docs/pacing.md
// say the rest. Given more than once, its options add up.
func WithPacing(opts ...pace.Option) Option {
	noNil("WithPacing", "pace.Option", opts)
	return func(t *Transport) {
		t.given |= givenPacing
		t.paceOpts = append(t.paceOpts, opts...)
	}
}

// NoHedge returns a copy of ctx under which requests are never hedged.
func NoHedge(ctx context.Context) context.Context {
	return withCallOptions(ctx, func(co *callOptions) { co.noHedge = true })
}

// noNil panics, naming the option fn and the type of its options, if one
// of opts is nil.
func noNil[C any, O ~func(*C)](fn, typ string, opts []O) {
	for _, o := range opts {
		if o == nil {
			panic("retryhttp: " + fn + ": nil " + typ)
		}
	}
}
