package budget

import (
	"fmt"
	"math"
	"net/http"
	"sync/atomic"

	"github.com/retryhttp/retryhttp/classify"
	"github.com/retryhttp/retryhttp/internal/lru"
	"github.com/retryhttp/retryhttp/internal/wire"
)

// Millitokens counts budget in thousandths of a token, so that fractional refunds
// add up exactly (ten refunds of 0.1 make exactly one token).
type Millitokens int64

// Token is one whole token.
const Token Millitokens = 1000

// A Budget decides whether a retry may be spent. The Transport calls Withdraw
// before every retry (never before a first attempt, which always goes out) and
// Deposit when an attempt succeeds: when it returns a response it does not
// retry whose status is below 500. Implementations must be safe for
// concurrent use; Deposit is on every request's path and should not allocate.
type Budget interface {
	// Withdraw asks for one retry of req, whose last attempt failed with
	// verdict v. It returns the amount taken, or an error wrapping
	// retryhttp.ErrBudgetExhausted when no retry may be made.
	Withdraw(req *http.Request, v classify.Verdict) (Millitokens, error)
	// Deposit reports that an attempt of req succeeded. spent is what Withdraw
	// took for the retry that succeeded, or 0 when the first attempt did.
	Deposit(req *http.Request, spent Millitokens)
}

var (
	_ Budget = (*Bucket)(nil)
	_ Budget = (*PerHost)(nil)
)

// A Option configures the buckets made by NewBucket and NewPerHost.
// Amounts are in tokens and may be fractional; they are rounded to the
// nearest thousandth of a token. The constructors panic on invalid values.
type Option func(*bucketConfig)

type bucketConfig struct {
	capacity, retryCost, timeoutCost, refund float64
	maxHosts                                 int
}

// Capacity sets the number of tokens a bucket holds when full, which is
// also what it starts with. It must be positive. The default is 500, enough
// for 100 retries at the default cost.
func Capacity(tokens float64) Option {
	return func(c *bucketConfig) { c.capacity = tokens }
}

// RetryCost sets the number of tokens a retry costs. It must be at
// least 0 and at most the capacity; a cost of 0 makes such retries free. The
// default is 5.
func RetryCost(tokens float64) Option {
	return func(c *bucketConfig) { c.retryCost = tokens }
}

// TimeoutCost sets the number of tokens a retry costs when the failed
// attempt timed out (its Verdict has Timeout set), which suggests a degraded
// dependency. It must be at least 0 and at most the capacity. The default is
// 10.
func TimeoutCost(tokens float64) Option {
	return func(c *bucketConfig) { c.timeoutCost = tokens }
}

// Refund sets the number of tokens a first attempt that succeeds puts
// back. It must be at least 0, and may be fractional: 0.1 refunds one token
// per ten successes. The default is 1, so that with the default retry cost
// an empty bucket allows one retry per five successful requests.
func Refund(tokens float64) Option {
	return func(c *bucketConfig) { c.refund = tokens }
}

// MaxHosts sets the number of per-host buckets a PerHost keeps at
// most, forgetting the host least recently used to make room for a new one;
// see PerHost. It must be at least 1. The default is 1024.
// NewBucket checks it but has no other use for it.
func MaxHosts(n int) Option {
	return func(c *bucketConfig) { c.maxHosts = n }
}

// limits is a validated bucket configuration in fixed point.
type limits struct {
	capacity, retryCost, timeoutCost, refund Millitokens
}

// newLimits applies opts to the defaults, validates the result and converts
// it to fixed point. It panics with a message naming the offending option.
func newLimits(opts []Option) (limits, int) {
	c := bucketConfig{capacity: 500, retryCost: 5, timeoutCost: 10, refund: 1, maxHosts: 1024}
	for _, opt := range opts {
		opt(&c)
	}
	var l limits
	l.capacity = toTokens("Capacity", c.capacity)
	if l.capacity <= 0 {
		panic(fmt.Sprintf("budget: Capacity must be positive, got %v", c.capacity))
	}
	l.retryCost = toTokens("RetryCost", c.retryCost)
	l.timeoutCost = toTokens("TimeoutCost", c.timeoutCost)
	l.refund = toTokens("Refund", c.refund)
	if l.retryCost > l.capacity {
		panic(fmt.Sprintf("budget: RetryCost (%v) must not exceed Capacity (%v)", c.retryCost, c.capacity))
	}
	if l.timeoutCost > l.capacity {
		panic(fmt.Sprintf("budget: TimeoutCost (%v) must not exceed Capacity (%v)", c.timeoutCost, c.capacity))
	}
	if c.maxHosts < 1 {
		panic(fmt.Sprintf("budget: MaxHosts must be at least 1, got %d", c.maxHosts))
	}
	return l, c.maxHosts
}

// toTokens converts an option's amount to fixed point, panicking if it is
// not a finite number, is negative, or does not fit.
func toTokens(option string, x float64) Millitokens {
	switch {
	case math.IsNaN(x) || math.IsInf(x, 0):
		panic(fmt.Sprintf("budget: %s must be finite, got %v", option, x))
	case x < 0 && option == "Capacity":
		panic(fmt.Sprintf("budget: %s must be positive, got %v", option, x))
	case x < 0:
		panic(fmt.Sprintf("budget: %s must not be negative, got %v", option, x))
	}
	m := math.Round(x * float64(Token))
	if m >= math.MaxInt64 { // float64(math.MaxInt64) is 2^63, one past the largest int64
		panic(fmt.Sprintf("budget: %s is too large, got %v", option, x))
	}
	return Millitokens(m)
}

// cost returns what a retry after verdict v costs.
func (l *limits) cost(v classify.Verdict) Millitokens {
	if v.Timeout {
		return l.timeoutCost
	}
	return l.retryCost
}

// credit returns what a success puts back: the cost of the retry that
// succeeded, or the refund for a first attempt.
func (l *limits) credit(spent Millitokens) Millitokens {
	if spent > 0 {
		return spent
	}
	return l.refund
}

// A Bucket is a retry budget shared by every host: a single token bucket that
// retries draw from and successful attempts refill. It has no clock: only
// successes refill it, so once a dependency that fails every request has
// used up the bucket, it sees about one attempt per request rather than as
// many as the Transport would otherwise make.
//
// A bucket starts full, holding Capacity tokens (500 by default). A
// retry costs RetryCost tokens (5), or TimeoutCost (10) when the
// failed attempt timed out; it is refused with retryhttp.ErrBudgetExhausted, and the
// balance left unchanged, when the balance is less than the cost. A retry
// that succeeds puts back what it cost, and a first attempt that succeeds
// puts back Refund tokens (1). The balance never goes below zero or
// above the capacity. With the defaults a full bucket pays for 100 retries,
// and an empty one allows one retry for every five successful requests.
//
// A Bucket must be created with NewBucket. It is safe for concurrent use by
// multiple goroutines and is lock-free. Pass the same Bucket to several
// Transports (with WithBudget) to give them a single budget. Most callers
// want the per-host budget Transports use by default, NewPerHost; a
// Bucket suits a client that talks to a single dependency, or that wants
// one budget for all of them.
type Bucket struct {
	balance atomic.Int64 // in Millitokens; evicted once a PerHost has dropped the bucket
	limits
	used lru.Use // when a PerHost last used the bucket
}

// evicted is the balance of a bucket that a PerHost has dropped from its
// table. A bucket is dropped by swapping its balance for evicted
// atomically, so that a request still holding the bucket can tell that it is
// no longer in use instead of drawing from it.
const evicted = math.MinInt64

// NewBucket returns a full Bucket configured by opts. It panics if an
// option's value is invalid.
func NewBucket(opts ...Option) *Bucket {
	l, _ := newLimits(opts)
	return newBucket(l, l.capacity)
}

func newBucket(l limits, balance Millitokens) *Bucket {
	b := &Bucket{limits: l}
	b.balance.Store(int64(balance))
	return b
}

// Withdraw takes the cost of a retry after verdict v from the bucket and
// returns it, or returns retryhttp.ErrBudgetExhausted if the balance is less than the
// cost. A cost of 0 always succeeds. The request is not used.
func (b *Bucket) Withdraw(_ *http.Request, v classify.Verdict) (Millitokens, error) {
	cost := b.cost(v)
	if cost == 0 {
		return 0, nil
	}
	if ok, _ := b.take(cost); !ok {
		return 0, wire.ErrBudgetExhausted
	}
	return cost, nil
}

// Deposit puts back spent, the cost of a retry that succeeded, or the refund
// if spent is 0 (a first attempt succeeded), without exceeding the capacity.
// On a full bucket it only reads the balance. The request is not used.
func (b *Bucket) Deposit(_ *http.Request, spent Millitokens) {
	if amount := b.credit(spent); amount > 0 {
		b.put(amount)
	}
}

// Balance returns the number of tokens in the bucket.
func (b *Bucket) Balance() Millitokens {
	return Millitokens(b.balance.Load())
}

// take subtracts cost, which is positive, unless the balance is less than
// cost. It reports whether it did, and whether the bucket is still in use
// (not evicted).
func (b *Bucket) take(cost Millitokens) (ok, live bool) {
	for {
		cur := b.balance.Load()
		if cur < int64(cost) {
			return false, cur != evicted
		}
		if b.balance.CompareAndSwap(cur, cur-int64(cost)) {
			return true, true
		}
	}
}

// put adds amount, which is positive, up to the capacity. On a full bucket
// it is a single load. It reports false, and changes nothing, if the bucket
// has been evicted.
func (b *Bucket) put(amount Millitokens) (live bool) {
	limit := int64(b.capacity)
	for cur := b.balance.Load(); cur < limit; cur = b.balance.Load() {
		if cur == evicted {
			return false
		}
		next := limit
		if int64(amount) < limit-cur {
			next = cur + int64(amount)
		}
		if b.balance.CompareAndSwap(cur, next) {
			break
		}
	}
	return true
}
