package redisbudget

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/retryhttp/retryhttp"
)

// A Budget is a retry budget with one token bucket per destination, kept in
// Redis so that every process that names the same budget draws from the
// same buckets. Its arithmetic is that of retryhttp.HostBudget: a bucket
// holds 500 tokens when full, a retry costs 5 (10 after a timeout), a
// first-attempt success puts back 1 and a successful retry what it cost; see
// WithBucket. A destination is a request URL's scheme and host, compared as
// HostBudget compares them.
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
// Redis fails a command, or leaves one unanswered for four timeouts, the
// budget moves to its fallback: every retry is decided by the fallback
// buckets, without asking Redis, until Redis answers a probe sent in the
// background every probe interval (WithProbeInterval, 500 ms); then the
// budget returns to Redis by itself. The fallback buckets start full, with a
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
	fbLimits    []retryhttp.BucketOption // the fallback's bucket options
	onRedis     atomic.Bool
	fallback    atomic.Pointer[retryhttp.HostBudget]
	table       atomic.Pointer[map[hostKey]*host] // never modified once stored
	inflight    atomic.Int64                      // Redis commands running
	abandoned   atomic.Int64                      // commands call stopped waiting for, not yet answered
	epoch       atomic.Int64                      // returns to Redis so far
	silentSince atomic.Int64                      // Unix nanoseconds since which abandoned has been positive, or 0
	heardAt     atomic.Int64                      // Unix nanoseconds of Redis's last answer without error, or 0
	mu          sync.Mutex                        // serialises changes to table and status
	status      Status                            // guarded by mu, except Shared
	stop        chan struct{}
	warmed      chan struct{} // closed once warm has returned
	done        chan struct{}
	closeOnce   sync.Once
	closeErr    error
}

var _ retryhttp.Budget = (*Budget)(nil)

// maxInflight bounds the Redis commands a Budget leaves running: past it,
// a hung Redis costs no more goroutines, and retries use the fallback.
const maxInflight = 256

// probeAttempts bounds the PINGs of one probe.
const probeAttempts = 4

// warmTimeout bounds how long a new Budget waits in the background for
// Redis to load its scripts.
const warmTimeout = time.Second

// Errors that Withdraw returns, all wrapping retryhttp.ErrBudgetExhausted.
var (
	errEmpty      = fmt.Errorf("redisbudget: shared bucket empty: %w", retryhttp.ErrBudgetExhausted)
	errFallback   = fmt.Errorf("redisbudget: fallback bucket empty: %w", retryhttp.ErrBudgetExhausted)
	errFailClosed = fmt.Errorf("redisbudget: Redis unavailable and the budget fails closed: %w", retryhttp.ErrBudgetExhausted)
	errSlow       = fmt.Errorf("redisbudget: Redis did not answer in time, and its last answer for the host granted no retry: %w", retryhttp.ErrBudgetExhausted)
	errUnheard    = fmt.Errorf("redisbudget: Redis unavailable, and this process has not heard from it within the key TTL, so it has no fallback budget: %w", retryhttp.ErrBudgetExhausted)
	errTimeout    = errors.New("redisbudget: Redis did not answer within the timeout")
	errBusy       = errors.New("redisbudget: too many Redis commands outstanding")
)

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
	if client == nil {
		panic("redisbudget: New: nil client")
	}
	if name == "" {
		panic("redisbudget: New: empty budget name")
	}
	cfg := defaultConfig()
	for _, o := range opts {
		if o == nil {
			panic("redisbudget: New: nil Option")
		}
		o(&cfg)
	}
	cfg.check()
	l := bucketLimits(cfg.bucket)
	if l.capacity > maxCapacity {
		panic(fmt.Sprintf("redisbudget: BucketCapacity must be at most %d tokens", maxCapacity/retryhttp.Token))
	}
	return newBudget(newRedisStore(client, l.capacity, cfg.keyTTL), name, l, cfg)
}

func newBudget(s store, name string, l limits, cfg config) *Budget {
	fbCap := cfg.fallbackCap
	if fbCap == 0 {
		fbCap = float64(l.capacity) / float64(cfg.processes)
		fbCap = max(fbCap, float64(l.retryCost), float64(l.timeoutCost)) / float64(retryhttp.Token)
	} else if cost := max(l.retryCost, l.timeoutCost); fbCap*float64(retryhttp.Token) < float64(cost) {
		panic(fmt.Sprintf("redisbudget: WithFallbackCapacity (%v) must be at least the retry and timeout costs", fbCap))
	}
	b := &Budget{
		limits:   l,
		store:    s,
		name:     name,
		prefix:   "retryhttp:budget:" + name + ":",
		cfg:      cfg,
		fbLimits: append(cfg.bucket[:len(cfg.bucket):len(cfg.bucket)], retryhttp.BucketCapacity(fbCap)),
		stop:     make(chan struct{}),
		warmed:   make(chan struct{}),
		done:     make(chan struct{}),
	}
	b.onRedis.Store(true)
	b.status = Status{Shared: true, Since: time.Now()}
	b.fallback.Store(retryhttp.NewHostBudget(b.fbLimits...))
	b.table.Store(&map[hostKey]*host{})
	go b.loop()
	return b
}

// Withdraw takes the cost of a retry of req after verdict v from the bucket
// of req's host and returns it, or returns an error wrapping
// retryhttp.ErrBudgetExhausted if the bucket holds less. A cost of 0 always
// succeeds and asks nothing. On Redis it costs one command, unless Redis has
// just refused a retry for the host; on the fallback, none. It waits for
// Redis no longer than the timeout, nor once req's context is done.
func (b *Budget) Withdraw(req *http.Request, v retryhttp.Verdict) (retryhttp.Tokens, error) {
	cost := b.cost(v)
	if cost == 0 {
		return 0, nil
	}
	if !b.onRedis.Load() {
		return b.withdrawFallback(req, v)
	}
	k := requestKey(req)
	h := b.host(k)
	deadline := time.Now().Add(b.cfg.timeout)
	var key string
	if h != nil {
		if h.holds(cost, time.Now()) {
			return 0, errEmpty
		}
		// One take per host at a time: concurrent retries for the host
		// wait for the one in flight, and a refusal it brings refuses
		// them all without a command of their own.
		if err := h.lock(req.Context(), deadline); err != nil {
			return b.unanswered(req, v, h, err)
		}
		defer h.unlock()
		if h.holds(cost, time.Now()) {
			return 0, errEmpty
		}
		key = h.key
	} else {
		key = redisKey(b.prefix, k)
	}
	ok, balance, err := b.take(req.Context(), time.Until(deadline), h, key, cost)
	switch {
	case err != nil && req.Context().Err() != nil:
		// The caller gave up, which says nothing about Redis, and the
		// Transport will not retry.
		return 0, fmt.Errorf("redisbudget: %w: %w", retryhttp.ErrBudgetExhausted, req.Context().Err())
	case errors.Is(err, errTimeout) || errors.Is(err, errBusy):
		b.noteError(err)
		return b.unanswered(req, v, h, err)
	case err != nil:
		b.fail(err)
		return b.withdrawFallback(req, v)
	case !ok:
		b.refused(h, balance)
		return 0, errEmpty
	}
	if h != nil && !h.granted.Load() {
		h.granted.Store(true)
	}
	return cost, nil
}

// unanswered decides a retry for h that Redis did not answer in time
// (err), perhaps because it is slow only for this command; the budget moves
// to the fallback only if Redis stays silent (see stuck) or the late answer
// is an error. Meanwhile the fallback pays only if Redis's last answer for
// the host granted a retry: a process that has heard nothing, as a new one
// in an outage, must not bring a budget of its own.
func (b *Budget) unanswered(req *http.Request, v retryhttp.Verdict, h *host, err error) (retryhttp.Tokens, error) {
	if req.Context().Err() != nil {
		return 0, fmt.Errorf("redisbudget: %w: %w", retryhttp.ErrBudgetExhausted, req.Context().Err())
	}
	if h == nil || !h.granted.Load() {
		return 0, errSlow
	}
	return b.withdrawFallback(req, v)
}

// refused records that Redis found h's bucket holding only balance: the
// host's last answer granted nothing, and retries that cost more are
// refused without a command for the hold (WithEmptyHold).
func (b *Budget) refused(h *host, balance retryhttp.Tokens) {
	if h == nil {
		return
	}
	h.granted.Store(false)
	if b.cfg.emptyHold > 0 {
		h.refused.Store(&refusal{balance: balance, until: time.Now().Add(b.cfg.emptyHold).UnixNano()})
	}
}

// heard records an answer from Redis.
func (b *Budget) heard() { b.heardAt.Store(time.Now().UnixNano()) }

// knowsRedis reports whether Redis answered this process within the key
// TTL: only then do its fallback buckets hold a share of a budget that Redis
// still keeps. A process that never heard from Redis, or not since the
// buckets it knew expired, has no share to fall back on.
func (b *Budget) knowsRedis(now time.Time) bool {
	at := b.heardAt.Load()
	return at != 0 && now.UnixNano()-at <= int64(b.cfg.keyTTL)
}

// withdrawFallback decides a retry that Redis does not.
func (b *Budget) withdrawFallback(req *http.Request, v retryhttp.Verdict) (retryhttp.Tokens, error) {
	if b.cfg.failClosed {
		return 0, errFailClosed
	}
	if !b.knowsRedis(time.Now()) {
		return 0, errUnheard
	}
	took, err := b.fallback.Load().Withdraw(req, v)
	if err != nil {
		return 0, errFallback
	}
	return took, nil
}

// take asks the store to take cost from the bucket at key, waiting no longer
// than wait or until ctx is done. If it stops waiting and the store takes
// the cost later, the cost is refunded (to h, when there is one), since the
// fallback decided the retry; if the store refuses it later, the refusal is
// remembered all the same.
func (b *Budget) take(ctx context.Context, wait time.Duration, h *host, key string, cost retryhttp.Tokens) (bool, retryhttp.Tokens, error) {
	var ok bool
	var balance retryhttp.Tokens
	err := b.call(ctx, wait, func(ctx context.Context) error {
		var err error
		ok, balance, err = b.store.take(ctx, key, cost)
		return err
	}, func(err error) {
		switch {
		case err != nil || h == nil:
		case ok:
			h.addPending(cost, b.capacity)
		default:
			b.refused(h, balance)
		}
	})
	if err != nil {
		// ok and balance may still be written by a late answer.
		return false, 0, err
	}
	return ok, balance, nil
}

// call runs fn in a goroutine of its own and waits for it no longer than
// wait, or until ctx is done, so that a Redis client that ignores
// deadlines or retries for seconds cannot hold the caller. If call stops
// waiting first, it returns an error, and when fn returns its goroutine
// moves the budget to the fallback if fn failed, and runs late, if given,
// with fn's error. fn's context keeps ctx's values but not its
// cancellation, and ends after the silence limit, so that a slow answer can
// still arrive (and show that Redis is slow rather than down).
func (b *Budget) call(ctx context.Context, wait time.Duration, fn func(context.Context) error, late func(error)) error {
	if b.inflight.Add(1) > maxInflight {
		b.inflight.Add(-1)
		return errBusy
	}
	var (
		done   = make(chan struct{})
		state  atomic.Int32 // 0 running, 1 answered, 2 abandoned
		result error
	)
	epoch := b.epoch.Load()
	go func() {
		defer b.inflight.Add(-1)
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), b.silence())
		err := fn(cctx)
		cancel()
		if err == nil {
			b.heard()
		}
		result = err
		if state.CompareAndSwap(0, 1) {
			close(done)
			return
		}
		b.answered()
		if err != nil && b.epoch.Load() == epoch {
			// A failure from before the budget last returned to Redis
			// is old news.
			b.fail(err)
		}
		if late != nil {
			late(err)
		}
	}()
	timer := time.NewTimer(max(wait, 0))
	defer timer.Stop()
	var stopped error
	select {
	case <-done:
		return result
	case <-timer.C:
		stopped = errTimeout
	case <-ctx.Done():
		stopped = ctx.Err()
	}
	if state.CompareAndSwap(0, 2) {
		b.abandon()
		return stopped
	}
	<-done // answered just now
	return result
}

// abandon counts a command that call stopped waiting for.
func (b *Budget) abandon() {
	if b.abandoned.Add(1) == 1 {
		b.silentSince.Store(time.Now().UnixNano())
	}
}

// answered counts the late answer of an abandoned command.
func (b *Budget) answered() {
	if b.abandoned.Add(-1) == 0 {
		b.silentSince.Store(0)
	}
}

// silence returns how long Redis may leave a command unanswered before the
// budget takes it to be down rather than slow: four timeouts.
func (b *Budget) silence() time.Duration { return 4 * b.cfg.timeout }

// stuck reports whether some command has been left unanswered for the
// silence limit, without a pause: Redis is down or hung, and the client
// ignores deadlines.
func (b *Budget) stuck(now time.Time) bool {
	since := b.silentSince.Load()
	return b.abandoned.Load() > 0 && since != 0 && now.UnixNano()-since >= int64(b.silence())
}

// Deposit puts back spent, the cost of a retry of req that succeeded or was
// never sent, or the refund if spent is 0 (a first attempt succeeded). On
// Redis, it adds the amount to the refunds waiting to be sent for req's host,
// or does nothing if this process has not retried that host (or has since
// seen its bucket full); on the fallback, it refills the fallback bucket. It
// sends no command and does not allocate unless the host name has
// upper-case letters.
func (b *Budget) Deposit(req *http.Request, spent retryhttp.Tokens) {
	amount := b.credit(spent)
	if amount <= 0 {
		return
	}
	if !b.onRedis.Load() {
		b.fallback.Load().Deposit(req, spent)
		return
	}
	m := *b.table.Load()
	if len(m) == 0 {
		return
	}
	if h := m[requestKey(req)]; h != nil {
		h.addPending(amount, b.capacity)
	}
}

// host returns the state kept for k, making it if there is room; nil if
// there is none.
func (b *Budget) host(k hostKey) *host {
	if h := (*b.table.Load())[k]; h != nil {
		return h
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	m := *b.table.Load()
	if h := m[k]; h != nil {
		return h
	}
	var next map[hostKey]*host
	if len(m) < b.cfg.maxHosts {
		next = maps.Clone(m)
	} else {
		// Forget the hosts with nothing to send; a refusal is only a
		// shortcut.
		next = make(map[hostKey]*host, len(m))
		for hk, h := range m {
			if h.pending.Load() > 0 {
				next[hk] = h
			}
		}
		if len(next) >= b.cfg.maxHosts {
			return nil
		}
	}
	h := newHost(redisKey(b.prefix, k))
	next[k] = h
	b.table.Store(&next)
	return h
}

// forget drops the state of the hosts in full, whose buckets Redis has just
// reported full. Refunds that arrived since are dropped with it: they would
// go to a full bucket, unless another process has drawn on it meanwhile,
// and keeping a host whose successes never pause would cost a command per
// flush interval for ever.
func (b *Budget) forget(full []hostKey) {
	b.mu.Lock()
	defer b.mu.Unlock()
	next := maps.Clone(*b.table.Load())
	for _, k := range full {
		delete(next, k)
	}
	b.table.Store(&next)
}

// loop sends refunds every flush interval while on Redis, and probes Redis
// every probe interval while on the fallback, until Close.
func (b *Budget) loop() {
	defer close(b.done)
	b.warm()
	close(b.warmed)
	tick := time.NewTicker(min(b.cfg.flushInterval, b.cfg.probeInterval))
	defer tick.Stop()
	var lastFlush, lastProbe time.Time
	for {
		select {
		case <-b.stop:
			return
		case now := <-tick.C:
			if b.onRedis.Load() && b.stuck(now) {
				b.fail(errTimeout)
			}
			if b.onRedis.Load() {
				if now.Sub(lastFlush) >= b.cfg.flushInterval {
					lastFlush = now
					b.flush()
				}
			} else if now.Sub(lastProbe) >= b.cfg.probeInterval {
				lastProbe = now
				b.probe()
			}
		}
	}
}

// warm loads the scripts, and so opens a connection, before the first retry
// needs them. It waits longer than the timeout, since no request waits for
// it, and falls back if Redis fails or does not answer.
func (b *Budget) warm() {
	ctx, cancel := context.WithTimeout(context.Background(), warmTimeout)
	defer cancel()
	done := make(chan error, 1)
	b.inflight.Add(1)
	go func() {
		defer b.inflight.Add(-1)
		done <- b.store.load(ctx)
	}()
	timer := time.NewTimer(warmTimeout)
	defer timer.Stop()
	select {
	case err := <-done:
		if err != nil {
			b.fail(err)
		} else {
			b.heard()
		}
	case <-timer.C:
		b.fail(errTimeout)
	case <-b.stop:
	}
}

// flush sends each host's refunds in one command. It stops at the first
// failure, which moves the budget to its fallback, or the first command
// Redis does not answer in time, keeping the refunds not sent for later.
func (b *Budget) flush() error {
	var full []hostKey
	defer func() {
		if len(full) > 0 {
			b.forget(full)
		}
	}()
	for k, h := range *b.table.Load() {
		amount := retryhttp.Tokens(h.pending.Swap(0))
		if amount <= 0 {
			continue
		}
		var balance retryhttp.Tokens
		err := b.call(context.Background(), b.cfg.timeout, func(ctx context.Context) error {
			var err error
			balance, err = b.store.refund(ctx, h.key, amount)
			return err
		}, func(err error) {
			if err != nil {
				h.addPending(amount, b.capacity) // for the next flush
			}
		})
		switch {
		case errors.Is(err, errTimeout):
			// The late answer decides whether the refund is kept.
			b.noteError(err)
			return err
		case err != nil:
			// Not sent, or, at worst, lost with its answer and sent
			// again, which errs towards retrying, as a fallback does.
			h.addPending(amount, b.capacity)
			b.fail(err)
			return err
		}
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

// probe asks Redis whether it answers, and returns to it if it does. A
// PING that fails at once is sent again, a few times: after a restart of
// Redis, the client's pool holds connections that the restart broke, and
// each failed PING discards some of them.
func (b *Budget) probe() {
	late := func(err error) {
		if err == nil {
			b.resume() // answered, if slowly
		}
	}
	for range probeAttempts {
		err := b.call(context.Background(), b.cfg.timeout, b.store.ping, late)
		if err == nil {
			b.resume()
			return
		}
		b.noteError(err)
		if errors.Is(err, errTimeout) || errors.Is(err, errBusy) {
			return
		}
	}
}

// noteError records err as the last Redis error.
func (b *Budget) noteError(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.status.LastError, b.status.LastErrorAt = err, time.Now()
}

// fail records err and moves the budget to its fallback buckets, which are
// full unless slow answers have drawn on them since the budget last
// returned to Redis.
func (b *Budget) fail(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	b.status.LastError, b.status.LastErrorAt = err, now
	if !b.onRedis.Load() {
		return
	}
	b.onRedis.Store(false)
	b.status.Shared, b.status.Since = false, now
	if b.cfg.logger != nil {
		b.cfg.logger.LogAttrs(context.Background(), slog.LevelWarn, "redisbudget: Redis unavailable, retries use the fallback budget",
			slog.String("budget", b.name), slog.String("error", err.Error()))
	}
}

// resume moves the budget back to Redis.
func (b *Budget) resume() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.onRedis.Load() {
		return
	}
	// Refusals seen before the failure are stale, and the next outage
	// starts with full fallback buckets.
	for _, h := range *b.table.Load() {
		h.refused.Store(nil)
	}
	b.fallback.Store(retryhttp.NewHostBudget(b.fbLimits...))
	b.epoch.Add(1)
	b.onRedis.Store(true)
	b.status.Shared, b.status.Since = true, time.Now()
	if b.cfg.logger != nil {
		b.cfg.logger.LogAttrs(context.Background(), slog.LevelInfo, "redisbudget: Redis answers again, retries use the shared budget",
			slog.String("budget", b.name))
	}
}

// Status describes where a Budget takes its retries from.
type Status struct {
	// Shared reports that retries are paid from the buckets in Redis, and
	// not from the fallback.
	Shared bool
	// Since is when the budget last moved between Redis and the fallback,
	// or was created.
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
func (b *Budget) Balance(ctx context.Context, u *url.URL) (retryhttp.Tokens, error) {
	if !b.onRedis.Load() {
		return b.fallback.Load().Balance(u), nil
	}
	key := redisKey(b.prefix, requestKey(&http.Request{URL: u}))
	var balance retryhttp.Tokens
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
