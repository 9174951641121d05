package redisbudget

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/retryhttp/retryhttp/budget"
)

// A Budget is a retry budget with one token bucket per destination, kept in
// Redis so that every process that names the same budget draws from the
// same buckets. Its arithmetic is that of budget.PerHost: a bucket
// holds 500 tokens when full, a retry costs 5 (10 after a timeout), a
// first-attempt success puts back 1 and a successful retry what it cost; see
// WithBucket. A destination is a request URL's scheme and host, compared as
// budget.PerHost compares them.
//
// Only retries talk to Redis: each asks Redis to take its cost, one round
// trip on a path about to sleep anyway. When Redis refuses, later retries
// for that host are refused locally for a short while (WithEmptyHold).
// Successes never send a command: their refunds gather per host in the
// process and are sent in one command per host at most once per flush
// interval (WithFlushInterval), and by Close. A process keeps such state
// only for hosts it has retried, and forgets a host once Redis reports its
// bucket full, so healthy traffic costs Redis nothing.
//
// No retry waits for Redis longer than the timeout (WithTimeout, 50 ms).
// A retry that Redis does not answer in time is paid by a local per-host
// fallback bucket if Redis's last answer for its host granted a retry, and
// refused otherwise. Concurrent retries for one host wait for the take in
// flight, within the same timeout, and a refusal answers them all. When
// Redis fails a command, whether it is down or answers with an error such
// as READONLY or OOM, or leaves one unanswered for four timeouts, the
// budget moves to its fallback: every retry is decided by the fallback
// buckets, without asking Redis, until Redis runs a probe sent in the
// background every probe interval (WithProbeInterval, 500 ms), a script
// that writes a bucket as a take does; then the budget returns to Redis by
// itself. A key of the wrong type (WRONGTYPE) moves only its host to the
// fallback, and that host asks Redis again once per probe interval. The
// success of a retry the fallback paid for refills the fallback, not
// Redis. The fallback buckets start full, with a
// capacity of the shared capacity divided by the number of processes the
// user expects (WithProcesses), but only in a process that has heard from
// Redis within the key TTL (WithKeyTTL): a process that starts during an
// outage, or whose knowledge has expired, refuses every retry until Redis
// answers, so that a new process in an outage brings no budget of its own,
// however Redis fails. WithFailClosed makes the fallback refuse every retry.
// No request fails because of Redis.
//
// A Budget must be created with New and is safe for concurrent use. Pass it
// to retryhttp.WithBudget, and call Close when done to send the refunds
// still held and stop its background goroutine.
type Budget struct {
	limits
	store       store
	name        string
	prefix      string // of the buckets' Redis keys
	cfg         config
	fbLimits    []budget.Option    // the fallback's bucket options
	fbCap       budget.Millitokens // the fallback's capacity
	onRedis     atomic.Bool
	fallback    atomic.Pointer[budget.PerHost]
	table       atomic.Pointer[map[hostKey]*host] // never modified once stored
	inflight    atomic.Int64                      // Redis commands running
	abandoned   atomic.Int64                      // commands call stopped waiting for, not yet answered
	epoch       atomic.Int64                      // returns to Redis so far
	silentSince atomic.Int64                      // the instant (see mono) since which abandoned has been positive, or 0
	heardAt     atomic.Int64                      // the instant (see mono) of Redis's last answer without error, or 0
	suspect     atomic.Pointer[string]            // the key of the last command that failed, which probes write
	born        time.Time                         // when New made the budget, with its monotonic clock reading
	now         func() time.Time                  // the wall clock, for Status only
	mu          sync.Mutex                        // serialises changes to table and status
	status      Status                            // guarded by mu, except Shared
	stop        chan struct{}
	warmed      chan struct{} // closed once warm has returned
	done        chan struct{}
	closeOnce   sync.Once
	closeErr    error
}

// mono returns the current instant of the budget's own clock: nanoseconds
// since New made it, plus one, so that 0 can stand for never. It reads the
// monotonic clock, as time.Since does: the wall clock, which an operator or
// NTP may step by hours, times no hold, silence or TTL.
func (b *Budget) mono() int64 { return int64(time.Since(b.born)) + 1 }

var _ budget.Budget = (*Budget)(nil)

// New returns a Budget named name whose buckets live in Redis through client,
// which may be a *redis.Client, a *redis.ClusterClient, a Sentinel-backed
// failover client or a *redis.Ring. Every process that uses the same name
// (and the same Redis) shares one bucket per host. New sends no command; it
// starts a goroutine that Close stops. It panics if client is nil, name is
// empty or an option is invalid.
//
// The budget never waits for client longer than its timeout, whatever the
// client's own timeouts and retries, so the client's defaults are safe; a
// client with short timeouts (ReadTimeout and WriteTimeout of the same order
// as the budget's) and few retries frees its connections sooner when Redis
// hangs.
func New(client redis.UniversalClient, name string, opts ...Option) *Budget {
	cfg := newConfig("New", client, name, opts)
	l := bucketLimits(cfg.bucket)
	if l.capacity > maxCapacity {
		panic(fmt.Sprintf("redisbudget: budget.Capacity must be at most %d tokens", maxCapacity/budget.Token))
	}
	return newBudget(newRedisStore(client, l.capacity, cfg.keyTTL), name, l, cfg)
}

func newBudget(s store, name string, l limits, cfg config) *Budget {
	fbCap := cfg.fallbackCap
	if fbCap == 0 {
		fbCap = float64(l.capacity) / float64(cfg.processes)
		fbCap = max(fbCap, float64(l.retryCost), float64(l.timeoutCost)) / float64(budget.Token)
	} else if cost := max(l.retryCost, l.timeoutCost); fbCap*float64(budget.Token) < float64(cost) {
		panic(fmt.Sprintf("redisbudget: WithFallbackCapacity (%v) must be at least the retry and timeout costs", fbCap))
	}
	b := &Budget{
		limits:   l,
		store:    s,
		name:     name,
		prefix:   "retryhttp:budget:" + name + ":",
		cfg:      cfg,
		fbLimits: append(cfg.bucket[:len(cfg.bucket):len(cfg.bucket)], budget.Capacity(fbCap)),
		fbCap:    budget.Millitokens(fbCap * float64(budget.Token)),
		stop:     make(chan struct{}),
		warmed:   make(chan struct{}),
		done:     make(chan struct{}),
	}
	b.born, b.now = time.Now(), cfg.now
	b.onRedis.Store(true)
	b.status = Status{Shared: true, Since: b.now()}
	b.fallback.Store(budget.NewPerHost(b.fbLimits...))
	b.table.Store(&map[hostKey]*host{})
	go b.loop()
	return b
}

// Status describes where a Budget takes its retries from, or whether a
// ThrottleStore shares its counts.
type Status struct {
	// Shared reports that retries are paid from the buckets in Redis, and
	// not from the fallback; for a ThrottleStore, that its last exchange
	// succeeded.
	Shared bool
	// Since is when the budget last moved between Redis and the fallback,
	// or was created; for a ThrottleStore, when Shared last changed, or the
	// store was created.
	Since time.Time
	// LastError is the last error from Redis, including a timeout, and
	// LastErrorAt when it happened; nil if Redis has never failed.
	LastError   error
	LastErrorAt time.Time
}

// Status returns where the budget takes retries from, and the last Redis
// error.
func (b *Budget) Status() Status {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.status
}

// Balance returns the balance a retry to u would be paid from: that of u's
// host's bucket in Redis, or in the fallback while the budget is on it,
// which it reports with a nil error. Refunds not yet sent are not counted.
// If Redis fails to answer within the timeout, Balance returns the fallback
// balance and the error, without moving to the fallback.
func (b *Budget) Balance(ctx context.Context, u *url.URL) (budget.Millitokens, error) {
	if !b.onRedis.Load() {
		return b.fallback.Load().Balance(u), nil
	}
	key := redisKey(b.prefix, requestKey(&http.Request{URL: u}))
	var balance budget.Millitokens
	err := b.call(ctx, b.cfg.timeout, func(ctx context.Context) error {
		var err error
		balance, err = b.store.balance(ctx, key)
		return err
	}, nil)
	if err != nil {
		return b.fallback.Load().Balance(u), err
	}
	return balance, nil
}

// Flush sends the refunds gathered so far, one command per host, without
// waiting for the next flush interval. It returns the first error, which
// moves the budget to its fallback, and does nothing while on the fallback.
func (b *Budget) Flush() error {
	if !b.onRedis.Load() {
		return nil
	}
	return b.flush()
}

// Close stops the background goroutine and sends the refunds gathered so
// far, waiting for Redis no longer than the timeout per host. It returns the
// error of that last flush. The Budget keeps deciding retries after Close,
// but refunds made after it are never sent.
func (b *Budget) Close() error {
	b.closeOnce.Do(func() {
		close(b.stop)
		<-b.done
		b.closeErr = b.Flush()
	})
	return b.closeErr
}
