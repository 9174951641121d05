package retryhttp

import (
	"iter"
	"log/slog"
	"net/http"
	"time"

	"github.com/retryhttp/retryhttp/budget"
	"github.com/retryhttp/retryhttp/classify"
	"github.com/retryhttp/retryhttp/internal/layer"
	"github.com/retryhttp/retryhttp/internal/throttling"
	"github.com/retryhttp/retryhttp/throttle"
)

// How a Transport pays its retries from its budget (WithBudget; package
// budget holds the buckets): each retry withdraws its cost before it is
// sent, a success refunds (the last retry's cost, or the refund of a first
// attempt that succeeded), and a retry paid for but never sent gets its
// cost back. Adaptive throttling (package throttling) refuses a request
// or a retry to a host that has been failing, before anything is paid.

// deposit is t.budget.Deposit, called directly on the default budget.
func (t *Transport) deposit(req *http.Request, spent budget.Millitokens) {
	if h, ok := t.budget.(*budget.PerHost); ok {
		h.Deposit(req, spent)
		return
	}
	t.budget.Deposit(req, spent)
}

// pay withdraws the cost of a retry with verdict v from the budget, and
// reports false when the budget refuses it. The retry of a throttle from a
// host that pacing paces is paid by its turn instead (WithPacing): it
// waits until the host accepts it, and spends nothing the retries of
// other failures need. Its number is still bounded by the attempts
// allowed, and its rate by the host's pace.
func (s *retryState) pay(v classify.Verdict) bool {
	if s.t.budget == nil || v.Throttle && s.t.snd.Paces(s.req) {
		return true
	}
	took, err := s.t.budget.Withdraw(s.req, v)
	if err != nil {
		return false
	}
	s.spent = took
	return true
}

// refund gives the budget back what it took for a retry that was paid for
// but is not sent.
func (s *retryState) refund() {
	if s.t.budget != nil && s.spent > 0 {
		s.t.budget.Deposit(s.req, s.spent)
	}
}

// succeed refunds the budget for the request's success: what the last
// retry cost, or the refund of a first attempt that succeeded.
func (s *retryState) succeed() {
	if s.t.budget != nil {
		s.t.deposit(s.req, s.spent)
	}
}

// newThrottling returns the adaptive throttling of t, configured by opts:
// it reads t's clock and random source at each use, and t logs the first
// panic of a throttle.Store.
func newThrottling(t *Transport, opts []throttle.Option) *throttling.Throttler {
	return throttling.New(opts, throttling.Env{
		Now:           func() time.Time { return t.now() },
		Rand:          func() float64 { return t.rand() },
		StorePanicked: func(r any) { t.log().Panic("retryhttp: throttle store panicked; throttling on local counts", r) },
	})
}

// shed ends req, refused by adaptive throttling with probability p, before
// any attempt: it closes the body, logs and reports the refusal, and tells
// a server.Handler serving the request that a dependency was shed.
func (t *Transport) shed(req *http.Request, p float64) (*http.Response, error) {
	if req.Body != nil {
		req.Body.Close()
	}
	t.log().NotSent(req, 0, "retryhttp: throttled", string(GiveUpThrottled), slog.Float64("rejection_probability", p))
	t.reportGiveUp(req, GiveUpThrottled, ErrThrottled)
	layer.MarkShed(req.Context())
	return nil, &Error{Err: ErrThrottled}
}

// Rejections returns an iterator over the hosts whose outcomes adaptive
// throttling counts, with the probability that a request to each is refused
// now, in no particular order, for a gauge: every host requested lately, at
// most 1024.
// Without WithAdaptiveThrottling it yields nothing. Each host is locked
// briefly while its probability is computed.
func (t *Transport) Rejections() iter.Seq[throttle.Rejection] {
	if th := t.ready().throttle; th != nil {
		return th.Rejections()
	}
	return func(func(throttle.Rejection) bool) {}
}
