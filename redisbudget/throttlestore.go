package redisbudget

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/retryhttp/retryhttp/throttle"
)

// throttleSteps is how many steps a window of adaptive throttling turns in.
const throttleSteps = 20

var (
	//go:embed exchange.lua
	exchangeSource string
	exchangeScript = redis.NewScript(exchangeSource)
)

// A ThrottleStore is a throttle.Store in Redis: it shares the counts of
// adaptive throttling among the processes of a fleet, so that together they
// refuse requests to a failing host as one process sending all of their
// requests would. Pass it to throttle.Shared.
//
// Each exchange is one round trip, one script: it adds the process's
// counts to their hosts' current steps, forgets the earlier counts of a
// host that healed, drops the steps that have left the window, and returns
// the fleet's sums over the window for every host with counts in it, each
// with the latest Sent the fleet gave of the host since its last heal
// (kept while the host has counts in the window, however old). A
// Transport exchanges twice a step of its window (a twentieth of it), four
// times while a host is being refused, and once more when a success ends
// a host's refusals, from a goroutine of its own, so a fleet of n
// processes runs 40n to 80n scripts per window, whatever its traffic.
//
// Steps are numbered on each process's wall clock, as the Unix time in
// milliseconds divided by the step's width in whole milliseconds, so
// processes agree on a step as closely as their clocks agree: to a few
// milliseconds under NTP, little against the default step of 500 ms.
// Processes whose windows differ keep their counts apart.
//
// Redis holds, per name and window, the counts of at most the most hosts
// kept (WithMaxHosts, 1024), the host counted least recently making room
// for a new one, and at most 20 steps of each host, in two keys that expire
// a window and a step after the last exchange. Their names have the
// store's name in a hash tag, which puts them in one slot of a Redis
// Cluster.
//
// A ThrottleStore must be created with NewThrottleStore and is safe for
// concurrent use. It has no goroutine of its own and nothing to close.
type ThrottleStore struct {
	scripts
	prefix string                       // of its Redis keys
	keys   atomic.Pointer[throttleKeys] // those of the last window exchanged
}

// throttleKeys are the Redis keys of one step width, in milliseconds.
type throttleKeys struct {
	width int64
	keys  []string // the hosts' sorted set, the counts' hash
}

var _ throttle.Store = (*ThrottleStore)(nil)

// NewThrottleStore returns a ThrottleStore named name whose counts live in
// Redis through client, which may be a *redis.Client, a *redis.ClusterClient,
// a Sentinel-backed failover client or a *redis.Ring. Every process that
// passes the same name (and the same Redis) shares its counts with the
// others; a name may be that of a Budget too, whose keys it does not touch.
// NewThrottleStore sends no command. It panics if client is nil, name is
// empty or an option is invalid.
//
// Of the options, WithTimeout bounds each exchange (50 ms), WithMaxHosts the
// hosts kept per name and window (1024), WithKeyTTL how long the keys
// outlive the last exchange, never more than a window and a step, and
// WithLogger logs when exchanges start and stop failing. The others, which
// configure a Budget's buckets and fallback, have no effect on a
// ThrottleStore, so that one list of options may serve both.
func NewThrottleStore(client redis.UniversalClient, name string, opts ...Option) *ThrottleStore {
	cfg := newConfig("NewThrottleStore", client, name, opts)
	return &ThrottleStore{
		scripts: newScripts(client, name, cfg,
			"redisbudget: Redis unavailable, throttling counts in each process alone",
			"redisbudget: Redis answers again, throttling counts for the fleet"),
		prefix: "{retryhttp:throttle:" + name + "}:",
	}
}

// Exchange adds counts to the fleet's counts over window and returns the
// fleet's sums over the last window, theirs included, as throttle.Store
// says, for at most the most hosts kept. It returns an error without
// sending anything if window is shorter than 20 ms (a step of less than a
// millisecond), or if an entry has a count below 0 or above 2^48, a Sent
// other than the zero time at or before 1970 or more than 2^53 ms after
// it, a scheme or host that is empty or holds a space or a control
// character, or a scheme with a colon. It waits for Redis no longer than
// the timeout (WithTimeout), nor once ctx is done: an exchange that fails
// may still add its counts, if Redis runs the script after Exchange
// stopped waiting for it.
func (s *ThrottleStore) Exchange(ctx context.Context, window time.Duration, counts []throttle.Counts) ([]throttle.Counts, error) {
	width := (window / throttleSteps).Milliseconds()
	if width < 1 {
		return nil, fmt.Errorf("redisbudget: Exchange: a window of %v is shorter than 20ms", window)
	}
	// A buffer of its own: a script abandoned at the timeout may still be
	// being written.
	batch, err := appendBatch(make([]byte, 0, 32*len(counts)), counts)
	if err != nil {
		return nil, err
	}
	step := floorDiv(s.cfg.now().UnixMilli(), width)
	ttl := min(s.cfg.keyTTL, time.Duration(throttleSteps+1)*time.Duration(width)*time.Millisecond)
	reply, err := s.run(ctx, s.keysOf(width), step, max(ttl.Milliseconds(), 1), s.cfg.maxHosts, batch, width)
	if err != nil {
		if ctx.Err() == nil {
			s.failed(err) // a caller who gives up says nothing of Redis
		}
		return nil, err
	}
	sums, err := parseSums(reply, s.cfg.maxHosts)
	if err != nil {
		s.failed(err)
		return nil, err
	}
	s.answered()
	return sums, nil
}

// floorDiv returns a/b rounded down, for b > 0.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b < 0 {
		q--
	}
	return q
}

// keysOf returns the Redis keys of the counts whose steps are width
// milliseconds wide: windows of another width have keys of their own, so
// that processes that disagree on the window never mix their steps. The
// name is in a hash tag, which places every key of a name in one slot of a
// Redis Cluster.
func (s *ThrottleStore) keysOf(width int64) []string {
	if k := s.keys.Load(); k != nil && k.width == width {
		return k.keys
	}
	w := strconv.FormatInt(width, 10)
	k := &throttleKeys{width: width, keys: []string{s.prefix + "hosts:" + w, s.prefix + "counts:" + w}}
	s.keys.Store(k)
	return k.keys
}

// run runs the exchange script and returns its reply (scripts.run).
func (s *ThrottleStore) run(ctx context.Context, keys []string, args ...any) (string, error) {
	return s.scripts.run(ctx, exchangeScript, keys, args...)
}

// Status reports whether the last exchange succeeded: Shared is false from
// an exchange that failed, for any reason but its caller giving up, until
// one succeeds, and Since is when that last changed, or when
// NewThrottleStore made the store. LastError is the last exchange's error.
func (s *ThrottleStore) Status() Status { return s.scripts.Status() }

// failed records the error of an exchange.
func (s *ThrottleStore) failed(err error) { s.scripts.failed(err) }

// answered records an exchange that succeeded.
func (s *ThrottleStore) answered() { s.scripts.answered() }
