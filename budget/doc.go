// Package budget decides how many retries a client may spend, so that a
// dependency that is down sees about one request per request rather than
// as many as the client would otherwise make.
//
// A Bucket is a token bucket without a clock: a retry takes tokens (5 by
// default, 10 after a timeout), a success puts a little back (1), and a
// retry is refused with retryhttp.ErrBudgetExhausted once the bucket holds
// less than it costs. It starts full (500 tokens: 100 retries). Only
// successes refill it, so a dependency that fails every request soon gets
// one attempt per request. PerHost keeps one Bucket per destination (Key),
// so that a failing host spends its own budget and not that of the healthy
// ones; it is what a retryhttp Transport uses by default. Amounts are
// counted in Millitokens, thousandths of a Token, so that fractional
// refunds add up exactly.
//
// Share one budget between several Transports by passing it to each:
//
//	hosts := budget.NewPerHost(budget.Capacity(100))
//	a := retryhttp.New(retryhttp.WithBudget(hosts))
//	b := retryhttp.New(retryhttp.WithBudget(hosts))
//
// A Budget of your own (the redisbudget module shares one across
// processes) implements Withdraw and Deposit.
package budget
