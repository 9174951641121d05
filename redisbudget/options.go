package redisbudget

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/retryhttp/retryhttp/budget"
	"github.com/retryhttp/retryhttp/classify"
)

// Defaults of the options below.
const (
	DefaultTimeout       = 50 * time.Millisecond
	DefaultFlushInterval = 100 * time.Millisecond
	DefaultEmptyHold     = 100 * time.Millisecond
	DefaultProbeInterval = 500 * time.Millisecond
	DefaultKeyTTL        = time.Minute
	DefaultMaxHosts      = 1024
)

// maxCapacity is the largest capacity in milli-tokens: Redis runs scripts in
// Lua, whose numbers are exact integers up to 2^53.
const maxCapacity budget.Millitokens = 1 << 53

// An Option configures a Budget made by New, or a ThrottleStore made by
// NewThrottleStore, which uses only WithTimeout, WithMaxHosts, WithKeyTTL
// and WithLogger and ignores the others. Both panic, naming the option,
// when a value is invalid.
type Option func(*config)

type config struct {
	bucket        []budget.Option
	processes     int
	fallbackCap   float64 // 0: capacity / processes
	failClosed    bool
	timeout       time.Duration
	flushInterval time.Duration
	emptyHold     time.Duration
	probeInterval time.Duration
	keyTTL        time.Duration
	maxHosts      int
	logger        *slog.Logger
	now           func() time.Time // the wall clock, which Status reports in; in-package tests step it
}

func defaultConfig() config {
	return config{
		processes:     1,
		timeout:       DefaultTimeout,
		flushInterval: DefaultFlushInterval,
		emptyHold:     DefaultEmptyHold,
		probeInterval: DefaultProbeInterval,
		keyTTL:        DefaultKeyTTL,
		maxHosts:      DefaultMaxHosts,
		now:           time.Now,
	}
}

// WithBucket sets the arithmetic of every bucket with the options of
// budget.NewPerHost: budget.Capacity (500 tokens), budget.RetryCost (5),
// budget.TimeoutCost (10) and budget.Refund (1), which panic in New as they do
// there. Every process that names the same budget must use the same values.
// budget.MaxHosts bounds the fallback's buckets. Later calls add to earlier
// ones.
func WithBucket(opts ...budget.Option) Option {
	return func(c *config) { c.bucket = append(c.bucket, opts...) }
}

// WithProcesses states how many processes are expected to share the budget
// at once. It sets the capacity of each host's fallback bucket, used while
// Redis is unavailable, to the shared capacity divided by n, so that the
// fleet as a whole keeps about one bucket's worth of retries. It must be at
// least 1. The default is 1: each process falls back to a full bucket of its
// own, as if it had no shared budget. A fallback bucket holds at least one
// retry's cost, however large n is. Only a process that has heard from
// Redis within the key TTL falls back to such a bucket; any other refuses
// retries until Redis answers.
func WithProcesses(n int) Option {
	return func(c *config) { c.processes = n }
}

// WithFallbackCapacity sets the capacity, in tokens, of each host's fallback
// bucket directly, overriding WithProcesses. It must be positive and at
// least the retry and timeout costs.
func WithFallbackCapacity(tokens float64) Option {
	return func(c *config) { c.fallbackCap = tokens }
}

// WithFailClosed makes the budget refuse every retry while Redis is
// unavailable, instead of paying for them from the fallback buckets. Requests
// still go out once; only their retries stop.
func WithFailClosed() Option {
	return func(c *config) { c.failClosed = true }
}

// WithTimeout sets the longest a retry waits for Redis. It must be
// positive. The default is 50 ms. It holds whatever the Redis client's own
// timeouts and retries are: the budget stops waiting for the command, which
// finishes, or fails, on its own, and is given four timeouts to do so. A
// command still unanswered then moves the budget to its fallback, as a
// failed one does; one answered late shows Redis is slow, not down. For a
// ThrottleStore it bounds each exchange, which then fails.
func WithTimeout(d time.Duration) Option {
	return func(c *config) { c.timeout = d }
}

// WithFlushInterval sets how often refunds gathered locally are sent to
// Redis: at most one command per host per interval. It must be positive. The
// default is 100 ms.
func WithFlushInterval(d time.Duration) Option {
	return func(c *config) { c.flushInterval = d }
}

// WithEmptyHold sets for how long, after Redis has refused a retry for a
// host, further retries for that host that cost as much are refused without
// asking Redis again. It must not be negative; 0 always asks. The default is
// 100 ms.
func WithEmptyHold(d time.Duration) Option {
	return func(c *config) { c.emptyHold = d }
}

// WithProbeInterval sets how often, while on its fallback, the budget asks
// Redis whether it answers again. It must be positive. The default is
// 500 ms.
func WithProbeInterval(d time.Duration) Option {
	return func(c *config) { c.probeInterval = d }
}

// WithKeyTTL sets how long a bucket that no process has used stays in Redis.
// An expired bucket is a full one, so this bounds the memory that a stream
// of new host names can take, and is the only way a bucket refills without
// successes. It must be at least a millisecond. The default is one minute.
// A ThrottleStore's keys expire a window and a step after the last
// exchange, when nothing in them counts any longer, or after the key TTL
// if that is shorter.
func WithKeyTTL(d time.Duration) Option {
	return func(c *config) { c.keyTTL = d }
}

// WithMaxHosts bounds the hosts for which a process keeps local state
// (refunds not yet sent, a recent refusal). A retry for a host beyond the
// bound still asks Redis, but its successes refund nothing. It must be at
// least 1. The default is 1024. For a ThrottleStore it bounds the hosts
// whose counts Redis holds per name and window, the host counted least
// recently making room: each exchange keeps no more than its own bound, so
// the processes that share a name should use the same.
func WithMaxHosts(n int) Option {
	return func(c *config) { c.maxHosts = n }
}

// WithLogger logs, at warning level, each switch to the fallback buckets
// with the error that caused it, and, at info level, each return to Redis.
// A ThrottleStore logs the first exchange that fails after one that
// succeeded (warning), and the first that succeeds after one that failed
// (info).
func WithLogger(l *slog.Logger) Option {
	return func(c *config) { c.logger = l }
}

// limits is the arithmetic of a bucket, in milli-tokens.
type limits struct {
	capacity, retryCost, timeoutCost, refund budget.Millitokens
}

// cost returns what a retry after verdict v costs.
func (l *limits) cost(v classify.Verdict) budget.Millitokens {
	if v.Timeout {
		return l.timeoutCost
	}
	return l.retryCost
}

// credit returns what a success puts back: the cost of the retry that
// succeeded (or of one never sent), or the refund for a first attempt.
func (l *limits) credit(spent budget.Millitokens) budget.Millitokens {
	if spent > 0 {
		return spent
	}
	return l.refund
}

// bucketLimits reads the arithmetic that opts give retryhttp's buckets. The
// options' values are not exported, so it asks buckets built with them: a
// full bucket's balance is the capacity, the first withdrawal from a full
// bucket is the cost, and a first-attempt success on a bucket emptied by one
// withdrawal of the whole capacity puts back the refund, or the capacity if
// the refund is larger, which fills the bucket all the same. Invalid options
// panic in budget.NewBucket with its message.
func bucketLimits(opts []budget.Option) limits {
	var l limits
	b := budget.NewBucket(opts...)
	l.capacity = b.Balance()
	l.retryCost, _ = b.Withdraw(nil, classify.Verdict{})
	b = budget.NewBucket(opts...)
	l.timeoutCost, _ = b.Withdraw(nil, classify.Verdict{Timeout: true})
	all := float64(l.capacity) / float64(budget.Token)
	b = budget.NewBucket(append(opts[:len(opts):len(opts)], budget.RetryCost(all))...)
	if _, err := b.Withdraw(nil, classify.Verdict{}); err != nil {
		panic(fmt.Sprintf("redisbudget: reading the bucket options: %v", err))
	}
	b.Deposit(nil, 0)
	l.refund = b.Balance()
	return l
}

// newConfig returns the defaults changed by opts, and panics, naming fn,
// the constructor given them, if client is nil, name is empty, an option
// is nil or a value is invalid.
func newConfig(fn string, client redis.UniversalClient, name string, opts []Option) config {
	if client == nil {
		panic("redisbudget: " + fn + ": nil client")
	}
	if name == "" {
		panic("redisbudget: " + fn + ": empty name")
	}
	c := defaultConfig()
	for _, o := range opts {
		if o == nil {
			panic("redisbudget: " + fn + ": nil Option")
		}
		o(&c)
	}
	c.check()
	return c
}

// check panics if c is invalid.
func (c *config) check() {
	switch {
	case c.processes < 1:
		panic(fmt.Sprintf("redisbudget: WithProcesses must be at least 1, got %d", c.processes))
	case c.fallbackCap < 0 || c.fallbackCap != c.fallbackCap:
		panic(fmt.Sprintf("redisbudget: WithFallbackCapacity must be positive, got %v", c.fallbackCap))
	case c.timeout <= 0:
		panic(fmt.Sprintf("redisbudget: WithTimeout must be positive, got %v", c.timeout))
	case c.flushInterval <= 0:
		panic(fmt.Sprintf("redisbudget: WithFlushInterval must be positive, got %v", c.flushInterval))
	case c.emptyHold < 0:
		panic(fmt.Sprintf("redisbudget: WithEmptyHold must not be negative, got %v", c.emptyHold))
	case c.probeInterval <= 0:
		panic(fmt.Sprintf("redisbudget: WithProbeInterval must be positive, got %v", c.probeInterval))
	case c.keyTTL < time.Millisecond:
		panic(fmt.Sprintf("redisbudget: WithKeyTTL must be at least 1ms, got %v", c.keyTTL))
	case c.maxHosts < 1:
		panic(fmt.Sprintf("redisbudget: WithMaxHosts must be at least 1, got %d", c.maxHosts))
	}
}
