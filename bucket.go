package retryhttp

// How a Transport pays its retries from its budget (WithBudget; package
// budget holds the buckets): each retry withdraws its cost before it is
// sent, a success refunds (the last retry's cost, or the refund of a first
// attempt that succeeded), and a retry paid for but never sent gets its
// cost back.

import (
	"net/http"

	"github.com/retryhttp/retryhttp/budget"
	"github.com/retryhttp/retryhttp/classify"
)

// deposit is t.budget.Deposit, called directly on the default budget.
func (t *Transport) deposit(req *http.Request, spent budget.Millitokens) {
	if h, ok := t.budget.(*budget.PerHost); ok {
		h.Deposit(req, spent)
		return
	}
	t.budget.Deposit(req, spent)
}

// pay withdraws the cost of a retry with verdict v from the budget, and
// reports false when the budget refuses it.
func (s *retryState) pay(v classify.Verdict) bool {
	if s.t.budget == nil {
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
