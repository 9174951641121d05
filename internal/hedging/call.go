package hedging

import (
	"context"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/retryhttp/retryhttp/budget"
	"github.com/retryhttp/retryhttp/classify"
	"github.com/retryhttp/retryhttp/internal/attempt"
	"github.com/retryhttp/retryhttp/internal/cancelctx"
	"github.com/retryhttp/retryhttp/internal/deadlinefmt"
	"github.com/retryhttp/retryhttp/internal/sender"
	"github.com/retryhttp/retryhttp/internal/wire"

	"github.com/retryhttp/retryhttp/internal/evidence"

	"github.com/retryhttp/retryhttp/internal/latency"
)

// A hedgeCall is one request's first round of attempts: the first attempt,
// sent on the caller's goroutine (or apart, see SendApart), and the hedges
// a timer starts while no attempt has answered. Its first attempt's
// request, context and trace live in it, so that a first attempt answered
// before the delay costs one allocation, traced or not.
type hedgeCall struct {
	env   Env
	h     *Hedging
	req   *http.Request // the caller's
	orig  *http.Request // the first attempt as the loop made it
	hl    *latency.Host
	delay time.Duration
	start time.Duration // monotonic

	first *http.Request   // the first attempt as sent: orig under ctx, held by trace
	ctx   cancelctx.Ctx   // the first attempt's (firstctx.go)
	trace evidence.Trace  // the first attempt's trace, and its request
	pt    *evidence.Trace // &trace when the attempts are traced, else nil
	body  firstBody       // the first attempt's response body, when it must release ctx

	// apart: the first attempt is sent from a goroutine of its own
	// (sendFirst), which gives its outcome to firstOut, unless a hedge
	// that won left it (firstLeft), which gives firstOut a placeholder.
	// Its context follows the caller's only until stopFirst.
	apart     bool
	firstOut  chan hedgeOutcome
	stopFirst func() bool

	mu          sync.Mutex
	maxAttempts int32
	sent        int32 // attempts sent, the first included
	winner      int32 // the attempt that won; 0 while none has
	collecting  bool  // the first attempt has returned: no more hedges
	race        *hedgeRace
	// Of a first attempt sent apart: whether it has returned, whether
	// it was left, and the timer that cancels it LoserWait after.
	firstReturned, firstLeft bool
	firstLimit               *time.Timer

	wait latency.Waiter // its place on the host's queue until its first hedge is due
}

// Hedge starts the call's first hedge, for the host's queue.
func (c *hedgeCall) Hedge() { c.fire() }

// hedgeRace is what a call keeps once its first hedge is sent or put off.
type hedgeRace struct {
	next     *time.Timer  // the timer of the next hedge
	hedges   []hedgeState // by attempt number - 2
	results  chan hedgeOutcome
	deferred int // the hedge whose sending was put off by a delay
}

// hedgeState is what the call keeps of one hedge in flight.
type hedgeState struct {
	cancel   context.CancelFunc // cancels it, and stops follow
	follow   func() bool        // stops its context's following the caller's
	returned bool               // its base round trip has returned: cancelling would cut its body
	// left: it lost once it had an HTTP/1 connection, and is left to
	// answer (leave); limit cancels it LoserWait after.
	left  bool
	limit *time.Timer
	pt    *evidence.Trace // its trace, nil when not traced
	took  budget.Millitokens
}

// LoserWait bounds how long an attempt that lost once it had an HTTP/1
// connection of its own is left to answer, its answer discarded, so that its connection
// goes back to the pool rather than being closed by a cancel, which would
// cost the server a connection and the next request a dial. It sends
// nothing more (a send net/http would make of it again is stopped), and
// holds a connection and a goroutine that long at most; the caller's
// context ending does not end it sooner.
const LoserWait = time.Second

// ApartRequests is how many of a host's next hedged requests send their
// first attempt apart once a hedge that won had to cancel a first attempt
// that had an HTTP/1 connection (closing it), or left one: a goroutine
// each, so that the hedge that wins can leave the first attempt to answer.
const ApartRequests = 1000

// hedgeOutcome is how one attempt of a hedged request ended.
type hedgeOutcome struct {
	resp *http.Response
	err  error
	a    *http.Request
	pt   *evidence.Trace // its trace, nil when not traced
	n    int             // the attempt number
	left bool            // it lost and was left to answer: no outcome of it is returned
}

// A Result is how a hedged request's first round ended: the winning
// outcome (or, when none won, the last response or the last error), its
// attempt request and trace, how many attempts were sent, what the budget
// took for a hedge that won, and the traces of every attempt, whose base
// may have sent them again.
type Result struct {
	Resp *http.Response
	A    *http.Request
	PT   *evidence.Trace
	Sent int
	// Unsent is how many of the Sent attempts, traced, were never
	// written whole: cancelled while they dialled, they never left.
	Unsent int
	Spent  budget.Millitokens
	Err    error
	First  *evidence.Trace   // the first attempt's trace
	Hedges []*evidence.Trace // the hedges'
}

// Env is what a hedged call asks of the Transport that sends it.
type Env interface {
	// Send sends one attempt through the base.
	Send(a *http.Request) (*http.Response, error)
	// Wins reports whether an attempt's outcome wins the race: a
	// response, a success or final. An error never wins while another
	// attempt may still answer, nor does a response that would be
	// retried.
	Wins(a *http.Request, resp *http.Response, err error) bool
	// Sender is what a hedge's deadline and pace are checked against,
	// and what gives it its deadline headers.
	Sender() *sender.Sender
	// Budget pays for each hedge, as for a retry; nil: hedges are free.
	Budget() budget.Budget
	// AttemptHeader is the header that numbers attempts; "": none.
	AttemptHeader() string
	// Hedging reports hedge n of req, sent after waited: the hook and
	// the log.
	Hedging(req *http.Request, n int, waited time.Duration)
	// Conns is the table the attempts' traces report to.
	Conns() *evidence.Evidence
}

// sendHedged makes the first attempt orig of req and, while no attempt has
// answered, a hedge after each delay, up to the attempts allowed, as the
// host's cap and the budget allow, each traced when traced is set.
func (h *Hedging) sendHedged(env Env, req, orig *http.Request, hl *latency.Host, delay time.Duration, maxAttempts int, traced bool) Result {
	c := &hedgeCall{env: env, h: h, req: req, orig: orig, hl: hl, delay: delay, start: latency.Monotonic(), maxAttempts: int32(maxAttempts), sent: 1}
	if c.apart = hl.SendApart(); c.apart {
		c.stopFirst = c.ctx.Follow(orig.Context())
		c.firstOut = make(chan hedgeOutcome, 1)
	} else {
		c.ctx.Init(orig.Context())
	}
	if traced {
		c.first, c.pt = c.trace.Begin(orig.WithContext(&c.ctx), nil, nil, env.Conns(), false), &c.trace
	} else {
		c.first = c.trace.Hold(orig.WithContext(&c.ctx))
	}
	hl.Hedges().Add(&c.wait, c, c.start+delay, c.start)
	var resp *http.Response
	var err error
	firstLeft := false
	if c.apart {
		go c.sendFirst()
		o := <-c.firstOut
		resp, err, firstLeft = o.resp, o.err, o.left
	} else {
		resp, err = env.Send(c.first)
		c.pt.End()
	}
	hl.Hedges().Remove(&c.wait)

	c.mu.Lock()
	c.collecting = true
	if c.race != nil && c.race.next != nil {
		c.race.next.Stop()
	}
	sent, lost := int(c.sent), c.winner != 0 // lost to a hedge, which cancelled or left it
	c.mu.Unlock()
	if resp != nil || lost {
		// A first attempt cut short by a winning hedge was at least this
		// slow; counting it keeps the quantile from forgetting the tail.
		hl.Record(c.start, latency.Monotonic(), h.window, h.quantile, h.minSamples)
	}
	if sent == 1 {
		return Result{Resp: c.firstWon(resp, 1), A: orig, PT: c.pt, Sent: 1, Err: err, First: c.pt}
	}
	return c.collect(resp, err, sent, lost, firstLeft)
}

// sendFirst sends the first attempt apart, on a goroutine of its own, and
// gives its outcome to firstOut, unless a hedge that won left it: it then
// discards it.
func (c *hedgeCall) sendFirst() {
	resp, err := c.env.Send(c.first)
	c.pt.End()
	c.mu.Lock()
	c.firstReturned = true
	left, limit := c.firstLeft, c.firstLimit
	c.mu.Unlock()
	if !left {
		c.firstOut <- hedgeOutcome{resp: resp, err: err, a: c.first, pt: c.pt, n: 1}
		return
	}
	if resp != nil {
		attempt.Discard(resp)
	}
	limit.Stop()
	c.ctx.Cancel(context.Canceled)
}

// releaseFirst lets go of the first attempt's context once the attempt is
// done with: what it holds under the caller's.
func (c *hedgeCall) releaseFirst() {
	c.ctx.Release()
	if c.stopFirst != nil {
		c.stopFirst()
	}
}

// firstWon returns the first attempt's response as the caller's, made to
// release the attempt's context when its body is closed, and to report
// sent attempts.
func (c *hedgeCall) firstWon(resp *http.Response, sent int) *http.Response {
	release := c.ctx.Settle() || c.apart
	if resp == nil {
		if release {
			c.releaseFirst()
		}
		return nil
	}
	if release {
		if _, ok := resp.Body.(io.Writer); ok {
			resp.Body = attempt.CancelBody(resp.Body, c.releaseFirst)
		} else {
			c.body = firstBody{ReadCloser: resp.Body, c: c}
			resp.Body = &c.body
		}
	}
	if resp.Request == c.first {
		// The caller sees the request it sent, as from a plain transport.
		resp.Request = c.orig
	}
	if sent > 1 {
		WithSent(resp, sent)
	}
	return resp
}

// WithSent makes resp's request report, to Attempts, sent attempts.
func WithSent(resp *http.Response, sent int) {
	if r := resp.Request; r != nil {
		resp.Request = r.WithContext(context.WithValue(r.Context(), sentKey{}, sent))
	}
}

// collect waits for every attempt of a call whose hedges were sent, once
// the first attempt has returned (lost: to a hedge that already won;
// firstLeft: which left it to answer), but for those left to answer, and
// picks the outcome: the winner's, or when none won, the last response to
// arrive, or the last error.
func (c *hedgeCall) collect(resp *http.Response, err error, sent int, lost, firstLeft bool) Result {
	if !lost && c.env.Wins(c.first, resp, err) {
		c.win(1)
	}
	outcomes := make([]hedgeOutcome, 0, sent)
	outcomes = append(outcomes, hedgeOutcome{resp: resp, err: err, a: c.first, pt: c.pt, n: 1, left: firstLeft})
	for range sent - 1 {
		outcomes = append(outcomes, <-c.race.results)
	}
	c.mu.Lock()
	winner := int(c.winner)
	c.mu.Unlock()
	// When none won, the last to end, preferring a response, which says
	// more (Retry-After, the status) than an error.
	pick := 0
	for i, o := range outcomes {
		if !o.left {
			pick = i
		}
	}
	for i, o := range outcomes {
		if o.resp != nil && (winner == 0 || o.n == winner) {
			pick = i
		}
	}
	for i, o := range outcomes {
		if i != pick {
			c.drop(o)
		}
	}
	o := outcomes[pick]
	r := Result{A: o.a, PT: o.pt, Sent: sent, Err: o.err, First: c.pt}
	for _, o := range outcomes {
		// One left to answer had its connection: it is sent.
		if o.pt != nil && o.resp == nil && !o.left && !o.pt.Written() {
			r.Unsent++
		}
	}
	c.mu.Lock()
	for _, h := range c.race.hedges {
		if h.pt != nil {
			r.Hedges = append(r.Hedges, h.pt)
		}
	}
	c.mu.Unlock()
	if o.n == 1 {
		r.Resp, r.A = c.firstWon(o.resp, sent), c.orig
		return r
	}
	hs := c.race.hedges[o.n-2]
	if o.resp == nil {
		hs.cancel()
		return r
	}
	o.resp.Body = attempt.CancelBody(o.resp.Body, hs.cancel)
	if o.n != sent {
		WithSent(o.resp, sent)
	}
	if o.n == winner {
		r.Spent = hs.took // refunded, as a retry's, if it succeeded
	}
	r.Resp = o.resp
	return r
}

// drop discards an outcome that is not returned and ends its context.
func (c *hedgeCall) drop(o hedgeOutcome) {
	if o.left {
		return // its own goroutine discards it
	}
	if o.resp != nil {
		attempt.Discard(o.resp)
	}
	if o.n == 1 {
		c.ctx.Settle()
		c.releaseFirst()
		return
	}
	c.race.hedges[o.n-2].cancel()
}

// win makes attempt n the winner, unless one already is, and cancels the
// attempts still waiting for a response, or leaves them to answer (leave)
// when they have an HTTP/1 connection, which a cancel would close: the
// hedges, and the first attempt when it was sent apart. A first attempt
// that is not must be cancelled, for it holds the caller's goroutine; when
// it has an HTTP/1 connection, the host's next hedged requests send theirs
// apart.
func (c *hedgeCall) win(n int) {
	c.mu.Lock()
	if c.winner != 0 {
		c.mu.Unlock()
		return
	}
	c.winner = int32(n)
	if c.race.next != nil {
		c.race.next.Stop()
	}
	var cancels []context.CancelFunc
	for i := range c.race.hedges {
		h := &c.race.hedges[i]
		if i+2 == n || h.returned {
			continue
		}
		if h.pt.HoldsConn() {
			h.left, h.limit = true, leave(h.pt, h.cancel, h.follow)
			c.race.results <- hedgeOutcome{pt: h.pt, n: i + 2, left: true}
			continue
		}
		cancels = append(cancels, h.cancel)
	}
	first := n != 1 && !c.collecting
	if first && c.pt.HoldsConn() {
		c.hl.KeepApart(ApartRequests)
		if c.apart && !c.firstReturned {
			c.firstLeft, c.firstLimit = true, leave(c.pt, c.cancelFirst, c.stopFirst)
			c.firstOut <- hedgeOutcome{pt: c.pt, n: 1, left: true}
			first = false
		}
	}
	c.mu.Unlock()
	if first {
		c.ctx.Cancel(context.Canceled)
	}
	for _, cancel := range cancels {
		cancel()
	}
}

// leave leaves an attempt that lost, traced by pt, to answer: its context
// stops following the caller's (follow), a send net/http would make of it
// again is stopped, and cancel cancels it after LoserWait, unless its
// goroutine stops the returned timer first.
func leave(pt *evidence.Trace, cancel func(), follow func() bool) *time.Timer {
	follow()
	pt.Abandon(cancel)
	return time.AfterFunc(LoserWait, cancel)
}

// cancelFirst cancels the first attempt.
func (c *hedgeCall) cancelFirst() { c.ctx.Cancel(context.Canceled) }

// fire sends the next hedge, unless an attempt has answered, the first has
// returned, the host has paused for everyone, or the host's cap or the
// budget refuse it; when the host has few hedges left, it puts the hedge
// off by a delay, once. While attempts remain, it arms the timer of the
// hedge after. It runs on a timer's goroutine, and sends the hedge on it.
func (c *hedgeCall) fire() {
	c.mu.Lock()
	stop, n, maxAttempts := c.collecting || c.winner != 0, int(c.sent)+1, int(c.maxAttempts)
	deferred := c.race != nil && c.race.deferred == n
	c.mu.Unlock()
	if stop || n > maxAttempts {
		return
	}
	now := latency.Monotonic()
	if c.hl.Late(now, c.delay) {
		return
	}
	if !deferred && c.hl.Scarce() {
		// Few hedges are left: keep them for the requests still waiting
		// one delay later, the slowest, rather than the first to pass it.
		c.mu.Lock()
		if !c.collecting && c.winner == 0 {
			r := c.raceLocked()
			r.deferred = n
			r.next = time.AfterFunc(c.delay, c.fire)
		}
		c.mu.Unlock()
		return
	}
	h, took, ok := prepare(c.env, c.req, c.orig, c.hl, n, maxAttempts)
	if !ok {
		return
	}
	// Its context follows the caller's until it is left to answer.
	ctx := new(cancelctx.Ctx)
	follow := ctx.Follow(h.Context())
	cancel := func() { follow(); ctx.Cancel(context.Canceled) }
	h = h.WithContext(ctx)
	c.mu.Lock()
	if c.collecting || c.winner != 0 {
		c.mu.Unlock()
		cancel()
		unprepare(c.env, c.req, c.orig, h, c.hl, took)
		return
	}
	c.sent = int32(n)
	r := c.raceLocked()
	r.hedges = append(r.hedges, hedgeState{cancel: cancel, follow: follow, took: took})
	if n < maxAttempts {
		r.next = time.AfterFunc(c.delay, c.fire)
	}
	c.mu.Unlock()
	waited := now - c.start
	c.env.Hedging(c.req, n, waited)
	// A timer runs fire on a goroutine of its own: the hedge can use it.
	c.run(h, n)
}

// raceLocked returns the call's race state, made on first use; c.mu is
// held.
func (c *hedgeCall) raceLocked() *hedgeRace {
	if c.race == nil {
		c.race = &hedgeRace{results: make(chan hedgeOutcome, c.maxAttempts)}
	}
	return c.race
}

// run sends hedge h, attempt n, and reports its outcome; a success or a
// final response wins at once, so that the first attempt ends.
func (c *hedgeCall) run(h *http.Request, n int) {
	var pt *evidence.Trace
	if c.pt != nil { // the hedges are traced as the first attempt is
		h, pt = evidence.NewTrace(h, nil, nil, c.env.Conns(), false)
		c.mu.Lock()
		c.race.hedges[n-2].pt = pt
		c.mu.Unlock()
	}
	resp, err := c.env.Send(h)
	pt.End()
	c.mu.Lock()
	hs := &c.race.hedges[n-2]
	hs.returned = true
	left, limit, cancel := hs.left, hs.limit, hs.cancel
	c.mu.Unlock()
	if left {
		// It lost, and was left to answer: discarded here.
		if resp != nil {
			attempt.Discard(resp)
		}
		limit.Stop()
		cancel()
		return
	}
	if c.env.Wins(h, resp, err) {
		c.win(n)
	}
	c.race.results <- hedgeOutcome{resp: resp, err: err, a: h, pt: pt, n: n}
}

// prepare returns hedge n of req, whose first attempt is a, if the time
// left before the request's deadline, its host's pace and credit, and the
// budget allow one: its request, with its own body, attempt number,
// attempt and deadline headers, and what the budget took.
func prepare(env Env, req, a *http.Request, hl *latency.Host, n, maxAttempts int) (*http.Request, budget.Millitokens, bool) {
	snd := env.Sender()
	left, timely := snd.HedgeTime(req, hl)
	if req.Context().Err() != nil || !timely || !hl.MayHedge() {
		return nil, 0, false
	}
	if !snd.FreeTurn(req) {
		// A paced host's hedge takes a turn that is free at once, or none.
		hl.Unhedge()
		return nil, 0, false
	}
	var took budget.Millitokens
	if b := env.Budget(); b != nil {
		var err error
		if took, err = b.Withdraw(req, classify.Verdict{Decision: classify.Retry}); err != nil {
			hl.Unhedge()
			return nil, 0, false
		}
	}
	hctx := attempt.WithNumber(a.Context(), n)
	if left > 0 {
		hctx = deadlinefmt.WithSent(hctx, left)
	}
	h := a.WithContext(hctx)
	name := env.AttemptHeader()
	if name != "" {
		h.Header = a.Header.Clone()
		wire.SetField(h.Header, name, wire.AttemptValue(n, maxAttempts))
	}
	if left > 0 {
		h.Header = snd.Header(h.Header, name != "", left)
	}
	if a.Body != nil && a.Body != http.NoBody {
		body, err := req.GetBody()
		if err != nil || body == nil {
			unprepare(env, req, a, h, hl, took)
			return nil, 0, false
		}
		h.Body = body
	}
	return h, took, true
}

// unprepare undoes prepare for a hedge h that will not be sent.
func unprepare(env Env, req, a, h *http.Request, hl *latency.Host, took budget.Millitokens) {
	if h.Body != nil && h.Body != a.Body {
		h.Body.Close()
	}
	hl.Unhedge()
	if b := env.Budget(); b != nil && took > 0 {
		b.Deposit(req, took)
	}
}
