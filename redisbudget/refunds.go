package redisbudget

import (
	"context"
	"errors"
	"net/http"

	"github.com/retryhttp/retryhttp/budget"
)

// Deposit puts back spent, the cost of a retry of req that succeeded or was
// never sent, or the refund if spent is 0 (a first attempt succeeded). On
// Redis, it adds the amount to the refunds waiting to be sent for req's host,
// or does nothing if this process has not retried that host (or has since
// seen its bucket full); on the fallback, or if the host's key is bad, it
// refills the fallback bucket. The cost of a retry that the fallback paid
// goes back to the fallback, wherever the budget is by then: as costs carry
// no name, the first successes of the host's retries that cost as much
// repay what the fallback paid. It sends no command and does not allocate
// unless the host name has upper-case letters.
func (b *Budget) Deposit(req *http.Request, spent budget.Millitokens) {
	amount := b.credit(spent)
	if amount <= 0 {
		return
	}
	var h *host
	if m := *b.table.Load(); len(m) > 0 {
		h = m[requestKey(req)]
	}
	switch {
	case h != nil && h.owed.Load() > 0 && h.repay(spent):
		b.fallback.Load().Deposit(req, spent)
	case !b.onRedis.Load() || h != nil && h.bad.Load() != 0:
		b.fallback.Load().Deposit(req, spent)
	case h != nil:
		h.addPending(amount, b.capacity)
	}
}

// flush sends each host's refunds in one command. It stops at the first
// failure, which moves the budget to its fallback, or the first command
// Redis does not answer in time, keeping the refunds not sent for later. A
// host whose key is bad loses its refunds, which no bucket can take, and
// the flush goes on.
func (b *Budget) flush() error {
	var full []hostKey
	defer func() {
		if len(full) > 0 {
			b.forget(full)
		}
	}()
	for k, h := range *b.table.Load() {
		amount := budget.Millitokens(h.pending.Swap(0))
		if amount <= 0 {
			continue
		}
		var balance budget.Millitokens
		err := b.call(context.Background(), b.cfg.timeout, func(ctx context.Context) error {
			var err error
			balance, err = b.store.refund(ctx, h.key, amount)
			return err
		}, func(err error) {
			switch {
			case isKeyError(err):
				b.badKeyFound(h, err)
			case err != nil:
				h.addPending(amount, b.capacity) // for the next flush
			}
		})
		switch {
		case errors.Is(err, errTimeout):
			// The late answer decides whether the refund is kept.
			b.noteError(err)
			return err
		case isKeyError(err):
			b.badKeyFound(h, err)
			continue
		case err != nil:
			// Not sent, or, at worst, lost with its answer and sent
			// again, which errs towards retrying, as a fallback does.
			h.addPending(amount, b.capacity)
			b.failOn(h.key, err)
			return err
		}
		b.keyUsable(h)
		switch {
		case balance >= b.capacity:
			full = append(full, k)
		case balance < b.retryCost:
			// The refund left too little for a retry: no take need
			// ask Redis for the hold.
			b.refused(h, balance)
		}
	}
	return nil
}
