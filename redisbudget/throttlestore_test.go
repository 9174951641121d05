package redisbudget

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/retryhttp/retryhttp/throttle"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The window of these tests: the Transport's default, in steps of 500 ms.
const (
	testWindow = 10 * time.Second
	testStep   = testWindow / throttleSteps
)

// testClock is a wall clock that stands still until the test moves it, so
// that the steps a store counts in are the test's to choose.
type testClock struct{ ms atomic.Int64 }

// newTestClock returns a clock at the start of a step of every width the
// tests use.
func newTestClock() *testClock {
	c := &testClock{}
	c.ms.Store(1_700_000_000_000) // before Redis's clock, which bounds steps ahead of it
	return c
}

func (c *testClock) now() time.Time { return time.UnixMilli(c.ms.Load()) }

// advance moves the clock by d.
func (c *testClock) advance(d time.Duration) { c.ms.Add(d.Milliseconds()) }

// withClock makes a ThrottleStore read the wall clock from c.
func withClock(c *testClock) Option { return func(cfg *config) { cfg.now = c.now } }

// counts returns the Counts of https://host.
func counts(host string, attempts, accepted, refused int64) throttle.Counts {
	return throttle.Counts{Scheme: "https", Host: host, Attempts: attempts, Accepted: accepted, Refused: refused}
}

// healed returns the Counts of https://host, marked Healed.
func healed(host string, attempts, accepted, refused int64) throttle.Counts {
	c := counts(host, attempts, accepted, refused)
	c.Healed = true
	return c
}

// exchange exchanges batch through s over testWindow, requires it to
// succeed, and returns the sums by host.
func exchange(t *testing.T, s throttle.Store, batch ...throttle.Counts) map[string]throttle.Counts {
	t.Helper()
	sums, err := s.Exchange(context.Background(), testWindow, batch)
	require.NoError(t, err)
	m := make(map[string]throttle.Counts, len(sums))
	for _, c := range sums {
		assert.False(t, c.Healed, "%v: returned Healed", c)
		_, dup := m[c.Host]
		require.False(t, dup, "%s twice", c.Host)
		m[c.Host] = c
	}
	return m
}

// sums returns the map exchange returns for cs.
func sums(cs ...throttle.Counts) map[string]throttle.Counts {
	m := make(map[string]throttle.Counts, len(cs))
	for _, c := range cs {
		m[c.Host] = c
	}
	return m
}

// A keyedStore is a ThrottleStore on a redis-server of its own, with a
// client of that server to read its keys over testWindow.
type keyedStore struct {
	*ThrottleStore
	rdb                 *redis.Client
	clock               *testClock
	hostsKey, countsKey string
}

// newKeyedStore starts a redis-server for the test and returns a
// ThrottleStore named name on it, its clock at the start of a step.
func newKeyedStore(t *testing.T, name string, opts ...Option) *keyedStore {
	rdb := newClient(t, startRedis(t))
	clock := newTestClock()
	prefix := "{retryhttp:throttle:" + name + "}:"
	return &keyedStore{
		ThrottleStore: NewThrottleStore(rdb, name, append(opts, withClock(clock))...),
		rdb:           rdb,
		clock:         clock,
		hostsKey:      prefix + "hosts:500",
		countsKey:     prefix + "counts:500",
	}
}

// step returns the step the store's clock is in.
func (k *keyedStore) step() int64 { return k.clock.ms.Load() / testStep.Milliseconds() }

// heldSteps returns how many steps the store holds of host.
func (k *keyedStore) heldSteps(t *testing.T, host string) int {
	t.Helper()
	v, err := k.rdb.HGet(context.Background(), k.countsKey, host).Result()
	require.NoError(t, err)
	return strings.Count(v, "|")
}

func TestThrottleStoreSumsTheFleet(t *testing.T) {
	s := startRedis(t)
	clock := newTestClock()
	a := NewThrottleStore(newClient(t, s), "sums", withClock(clock))
	b := NewThrottleStore(newClient(t, s), "sums", withClock(clock))

	assert.Equal(t, sums(counts("api.example", 10, 4, 2)), exchange(t, a, counts("api.example", 10, 4, 2)))
	assert.Equal(t, sums(counts("api.example", 15, 9, 2), counts("b.example", 3, 0, 0)),
		exchange(t, b, counts("api.example", 5, 5, 0), counts("b.example", 3, 0, 0)),
		"the fleet's sums, its own counts included")
	// A process learns of hosts it has not counted, and sends nothing to
	// do so.
	assert.Equal(t, sums(counts("api.example", 15, 9, 2), counts("b.example", 3, 0, 0)), exchange(t, a))
	// Counts of one step from one process sent in two entries add up.
	assert.Equal(t, sums(counts("api.example", 17, 9, 3), counts("b.example", 3, 0, 0)),
		exchange(t, a, counts("api.example", 1, 0, 0), counts("api.example", 1, 0, 1)))
	// An entry of no counts adds nothing, and names no host.
	assert.Equal(t, sums(counts("api.example", 17, 9, 3), counts("b.example", 3, 0, 0)),
		exchange(t, a, counts("c.example", 0, 0, 0)))

	// Another name, other sums; another scheme, another host.
	other := NewThrottleStore(newClient(t, s), "other", withClock(clock))
	plain := throttle.Counts{Scheme: "http", Host: "api.example", Attempts: 1}
	got, err := other.Exchange(context.Background(), testWindow, []throttle.Counts{plain})
	require.NoError(t, err)
	assert.Equal(t, []throttle.Counts{plain}, got)

	// Another window, other steps: counts of processes that disagree on the
	// window never mix.
	got, err = a.Exchange(context.Background(), testWindow/2, []throttle.Counts{counts("api.example", 1, 1, 0)})
	require.NoError(t, err)
	assert.Equal(t, []throttle.Counts{counts("api.example", 1, 1, 0)}, got)
	assert.Equal(t, sums(counts("api.example", 17, 9, 3), counts("b.example", 3, 0, 0)), exchange(t, b))
	// A Redis that has lost the script (restarted, or SCRIPT FLUSH) is sent
	// it again.
	command(t, s, "SCRIPT", "FLUSH")
	assert.Equal(t, sums(counts("api.example", 18, 9, 3), counts("b.example", 3, 0, 0)),
		exchange(t, a, counts("api.example", 1, 0, 0)))
	assert.True(t, a.Status().Shared)
	assert.NoError(t, a.Status().LastError)
}

// TestThrottleStoreWindowSlides checks that a step's counts count for 20
// steps, the window, and then leave it, and that Redis keeps no more than
// the window's 20 steps of a host, and nothing of a host once its counts
// have left the window.
func TestThrottleStoreWindowSlides(t *testing.T) {
	ts := newKeyedStore(t, "slides")
	rdb, clock, hostsKey, countsKey := ts.rdb, ts.clock, ts.hostsKey, ts.countsKey
	ctx := context.Background()

	// A host's field: its sums and sent as of a step, then the steps they
	// add up.
	step := ts.step()
	exchange(t, ts, counts("api.example", 2, 1, 0))
	assert.Equal(t, fmt.Sprintf("%d 2 1 0 0|%d 2 1 0", step, step), rdb.HGet(ctx, countsKey, "https://api.example").Val())
	assert.Equal(t, []redis.Z{{Score: float64(step), Member: "https://api.example"}}, rdb.ZRangeWithScores(ctx, hostsKey, 0, -1).Val())
	clock.advance(testStep)

	// A step's counts, 30 steps running: the sums climb to 20 steps' worth
	// and stay there.
	for i := range 30 {
		got := exchange(t, ts, counts("api.example", 2, 1, 0), counts("b.example", 1, 0, 0))
		na, nb := min(i+2, throttleSteps), int64(min(i+1, throttleSteps))
		require.Equal(t, sums(counts("api.example", int64(2*na), int64(na), 0), counts("b.example", nb, 0, 0)), got, "step %d", i)
		require.Equal(t, na, ts.heldSteps(t, "https://api.example"), "step %d", i)
		clock.advance(testStep)
	}
	// Keys live a window and a step after the last exchange.
	for _, key := range []string{hostsKey, countsKey} {
		ttl := rdb.PTTL(ctx, key).Val()
		assert.Greater(t, ttl, testWindow/2, key)
		assert.LessOrEqual(t, ttl, testWindow+testStep, key)
	}

	// b.example stops: its steps leave one by one, the last after 20 steps.
	for i := range throttleSteps {
		got := exchange(t, ts, counts("api.example", 2, 1, 0))
		n := int64(throttleSteps - 1 - i)
		want := sums(counts("api.example", 40, 20, 0), counts("b.example", n, 0, 0))
		if n == 0 {
			delete(want, "b.example") // no counts in the window: no host
		}
		require.Equal(t, want, got, "step %d after b.example stopped", i)
		clock.advance(testStep)
	}
	assert.Equal(t, []string{"https://api.example"}, rdb.ZRange(ctx, hostsKey, 0, -1).Val())
	assert.Equal(t, []string{"https://api.example"}, rdb.HKeys(ctx, countsKey).Val(), "b.example's steps still held")
	assert.Equal(t, throttleSteps, ts.heldSteps(t, "https://api.example"))

	// A clock that moves a whole window on finds nothing.
	clock.advance(testWindow)
	assert.Empty(t, exchange(t, ts))
	assert.Zero(t, rdb.Exists(ctx, hostsKey, countsKey).Val(), "keys with nothing to count")

	// The step is the whole clock's, so a step of 500 ms starts on every
	// half second: 499 ms on, the same step.
	exchange(t, ts, counts("api.example", 1, 0, 0))
	clock.advance(testStep - time.Millisecond)
	assert.Equal(t, sums(counts("api.example", 2, 0, 0)), exchange(t, ts, counts("api.example", 1, 0, 0)))
	assert.Equal(t, 1, ts.heldSteps(t, "https://api.example"))
}

// TestThrottleStoreHealForgetsAcrossProcesses checks that a Healed entry
// from one process makes every process forget the host's counts from
// before it, in earlier steps and in its own, and that its own counts
// count after it.
func TestThrottleStoreHealForgetsAcrossProcesses(t *testing.T) {
	s := startRedis(t)
	rdb := newClient(t, s)
	ctx := context.Background()
	clock := newTestClock()
	a := NewThrottleStore(newClient(t, s), "heal", withClock(clock))
	b := NewThrottleStore(newClient(t, s), "heal", withClock(clock))

	exchange(t, a, counts("api.example", 10, 0, 5), counts("b.example", 4, 0, 0))
	clock.advance(testStep)
	assert.Equal(t, sums(counts("api.example", 20, 0, 5), counts("b.example", 4, 0, 0)),
		exchange(t, b, counts("api.example", 10, 0, 0)))

	// b's requests heal: what it counted before the heal, in this step,
	// is forgotten with the rest; the success that healed it counts.
	assert.Equal(t, sums(counts("api.example", 1, 1, 0), counts("b.example", 4, 0, 0)),
		exchange(t, b, counts("api.example", 6, 0, 0), healed("api.example", 1, 1, 0)))
	assert.Equal(t, sums(counts("api.example", 1, 1, 0), counts("b.example", 4, 0, 0)), exchange(t, a),
		"the other process forgets them too")
	clock.advance(testStep)
	assert.Equal(t, sums(counts("api.example", 3, 1, 0), counts("b.example", 4, 0, 0)),
		exchange(t, a, counts("api.example", 2, 0, 0)))

	// A heal with no counts of its own leaves the host none: it is no
	// longer named. Other hosts keep theirs.
	assert.Equal(t, sums(counts("b.example", 4, 0, 0)), exchange(t, a, healed("api.example", 0, 0, 0)))
	// A heal of a host with no counts is nothing.
	assert.Equal(t, sums(counts("b.example", 4, 0, 0), counts("c.example", 1, 1, 0)),
		exchange(t, b, healed("c.example", 1, 1, 0)))
	// Counts then a heal with none, in one batch: the host is not held.
	assert.Equal(t, sums(counts("b.example", 4, 0, 0), counts("c.example", 1, 1, 0)),
		exchange(t, b, counts("d.example", 3, 0, 0), healed("d.example", 0, 0, 0)))
	assert.Equal(t, []string{"https://b.example", "https://c.example"}, rdb.ZRange(ctx, "{retryhttp:throttle:heal}:hosts:500", 0, -1).Val())
}

func TestThrottleStoreMaxHosts(t *testing.T) {
	ts := newKeyedStore(t, "max", WithMaxHosts(3))
	rdb, clock, countsKey := ts.rdb, ts.clock, ts.countsKey
	ctx := context.Background()

	for i := range 3 {
		exchange(t, ts, counts(fmt.Sprintf("h%d.example", i), 1, 0, 0))
		clock.advance(testStep)
	}
	// A fourth host evicts the host counted least recently, h0.
	assert.Equal(t, sums(counts("h1.example", 1, 0, 0), counts("h2.example", 1, 0, 0), counts("h3.example", 1, 0, 0)),
		exchange(t, ts, counts("h3.example", 1, 0, 0)))
	clock.advance(testStep)
	// h1 is counted again, then h4 comes: h2 makes room.
	exchange(t, ts, counts("h1.example", 1, 0, 0))
	assert.Equal(t, sums(counts("h1.example", 2, 0, 0), counts("h3.example", 1, 0, 0), counts("h4.example", 1, 0, 0)),
		exchange(t, ts, counts("h4.example", 1, 0, 0)))
	// The evicted hosts' counts go with them.
	assert.ElementsMatch(t, []string{"https://h1.example", "https://h3.example", "https://h4.example"}, rdb.HKeys(ctx, countsKey).Val())
	assert.Equal(t, 2, ts.heldSteps(t, "https://h1.example"))

	// A batch of more hosts than are kept leaves as many as are kept.
	clock.advance(testStep)
	var batch []throttle.Counts
	for i := range 10 {
		batch = append(batch, counts(fmt.Sprintf("n%d.example", i), 1, 0, 0))
	}
	got := exchange(t, ts, batch...)
	assert.Len(t, got, 3)
	assert.Equal(t, int64(3), rdb.HLen(ctx, countsKey).Val())
}

func TestThrottleStoreRefusesInvalidInput(t *testing.T) {
	s := startRedis(t)
	rdb := newClient(t, s)
	ts := NewThrottleStore(rdb, "invalid")
	tests := []struct {
		name   string
		window time.Duration
		c      throttle.Counts
	}{
		{"negative attempts", testWindow, counts("api.example", -1, 0, 0)},
		{"negative accepted", testWindow, counts("api.example", 1, -1, 0)},
		{"negative refused", testWindow, counts("api.example", 1, 0, -1)},
		{"count beyond 2^48", testWindow, counts("api.example", 1<<48+1, 0, 0)},
		{"empty host", testWindow, counts("", 1, 0, 0)},
		{"empty scheme", testWindow, throttle.Counts{Host: "api.example", Attempts: 1}},
		{"colon in scheme", testWindow, throttle.Counts{Scheme: "a:b", Host: "api.example", Attempts: 1}},
		{"newline in host", testWindow, counts("api.example\n1 1 1 0 https://x", 1, 0, 0)},
		{"space in host", testWindow, counts("api example", 1, 0, 0)},
		{"window of no step", 19 * time.Millisecond, counts("api.example", 1, 0, 0)},
		{"negative window", -testWindow, counts("api.example", 1, 0, 0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			batch := []throttle.Counts{counts("ok.example", 1, 0, 0), tt.c}
			got, err := ts.Exchange(context.Background(), tt.window, batch)
			require.Error(t, err)
			assert.Nil(t, got)
		})
	}
	assert.Zero(t, rdb.DBSize(context.Background()).Val(), "an invalid batch sent something")
	assert.True(t, ts.Status().Shared, "invalid input taken for Redis failing")
	// The largest count is taken, and a window of 20 steps of 1 ms.
	_, err := ts.Exchange(context.Background(), 20*time.Millisecond, []throttle.Counts{counts("api.example", 1<<48, 1<<48, 1<<48)})
	require.NoError(t, err)
}

func TestNewThrottleStorePanics(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { c.Close() })
	assert.PanicsWithValue(t, "redisbudget: NewThrottleStore: nil client", func() { NewThrottleStore(nil, "x") })
	assert.PanicsWithValue(t, "redisbudget: NewThrottleStore: empty name", func() { NewThrottleStore(c, "") })
	assert.PanicsWithValue(t, "redisbudget: NewThrottleStore: nil Option", func() { NewThrottleStore(c, "x", nil) })
	assert.Panics(t, func() { NewThrottleStore(c, "x", WithTimeout(0)) })
	assert.Panics(t, func() { NewThrottleStore(c, "x", WithMaxHosts(0)) })
	assert.Panics(t, func() { NewThrottleStore(c, "x", WithKeyTTL(0)) })
	// A Budget's own options do nothing here, and are accepted.
	assert.NotPanics(t, func() { NewThrottleStore(c, "x", WithProcesses(10), WithFailClosed(), WithEmptyHold(0)) })
}

// TestThrottleStoreConcurrentExchanges checks, under -race, that exchanges
// from many goroutines of two processes at once lose and double no count.
func TestThrottleStoreConcurrentExchanges(t *testing.T) {
	s := startRedis(t)
	clock := newTestClock()
	stores := []*ThrottleStore{
		NewThrottleStore(newClient(t, s), "concurrent", withClock(clock), WithTimeout(10*time.Second)),
		NewThrottleStore(newClient(t, s), "concurrent", withClock(clock), WithTimeout(10*time.Second)),
	}
	const goroutines, exchanges = 8, 50
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			own := fmt.Sprintf("g%d.example", g)
			for i := range exchanges {
				got, err := stores[g%2].Exchange(context.Background(), testWindow,
					[]throttle.Counts{counts("api.example", 2, 1, 0), counts(own, 1, 0, 1)})
				if !assert.NoError(t, err) {
					return
				}
				for _, c := range got {
					if c.Host == own {
						assert.Equal(t, counts(own, int64(i+1), 0, int64(i+1)), c)
					}
				}
			}
		})
	}
	wg.Wait()
	want := sums(counts("api.example", 2*goroutines*exchanges, goroutines*exchanges, 0))
	for g := range goroutines {
		own := fmt.Sprintf("g%d.example", g)
		want[own] = counts(own, exchanges, 0, exchanges)
	}
	assert.Equal(t, want, exchange(t, stores[0]))
}

// TestThrottleStoreMendsWhatItCannotRead checks that keys holding what the
// script did not write, an operator's or a bug's, neither fail an exchange
// nor count: a host in the sorted set with no counts, counts that are not
// the script's format, a host in the hash that the sorted set lacks, sums
// that are not those of their steps (never below 0). A key of another type
// fails the exchange, with Redis's error.
func TestThrottleStoreMendsWhatItCannotRead(t *testing.T) {
	ts := newKeyedStore(t, "mends")
	rdb, clock, hostsKey, countsKey := ts.rdb, ts.clock, ts.hostsKey, ts.countsKey
	ctx := context.Background()
	step := ts.step()
	exchange(t, ts, counts("api.example", 1, 0, 0))

	rdb.ZAdd(ctx, hostsKey, redis.Z{Score: float64(step - 30), Member: "https://ghost.example"})
	rdb.HSet(ctx, countsKey, "https://garbage.example", "not counts", "https://orphan.example", fmt.Sprintf("%d 5 0 0 0|%d 5 0 0", step-25, step-25),
		"https://wrong-sums.example", fmt.Sprintf("%d 1 0 0 0|%d 5 0 0|%d 1 0 0", step, step-19, step),
		"https://old-format.example", fmt.Sprintf("%d 1 0 0|%d 1 0 0", step, step))
	rdb.ZAdd(ctx, hostsKey, redis.Z{Score: float64(step), Member: "https://garbage.example"},
		redis.Z{Score: float64(step), Member: "https://wrong-sums.example"},
		redis.Z{Score: float64(step), Member: "https://old-format.example"})
	clock.advance(testStep)
	assert.Equal(t, sums(counts("api.example", 2, 0, 0), counts("wrong-sums.example", 0, 0, 0)),
		exchange(t, ts, counts("api.example", 1, 0, 0)))
	assert.ElementsMatch(t, []string{"https://api.example", "https://wrong-sums.example"}, rdb.ZRange(ctx, hostsKey, 0, -1).Val())
	assert.ElementsMatch(t, []string{"https://api.example", "https://wrong-sums.example"}, rdb.HKeys(ctx, countsKey).Val())

	// A key of another type, with no expiry, was WRONGTYPE at every
	// exchange until someone deleted it: the script drops it.
	for _, key := range []string{countsKey, hostsKey} {
		rdb.Del(ctx, key)
		rdb.Set(ctx, key, "a string", 0)
		assert.Equal(t, sums(counts("api.example", 1, 0, 0)), exchange(t, ts, counts("api.example", 1, 0, 0)), "key %s", key)
		assert.True(t, ts.Status().Shared)
		rdb.Del(ctx, hostsKey, countsKey)
	}

	// Fields of hosts the set does not hold, with steps far ahead, are
	// dropped rather than returned: 2,000 of them were returned untrimmed
	// at every exchange, past what a client reads.
	garbage := make([]any, 0, 4000)
	for i := range 2000 {
		garbage = append(garbage, fmt.Sprintf("https://g%d.example", i), fmt.Sprintf("%d 5 0 0 0|%d 5 0 0", step+10_000, step+10_000))
	}
	rdb.HSet(ctx, countsKey, garbage...)
	assert.Equal(t, sums(counts("api.example", 1, 0, 0)), exchange(t, ts, counts("api.example", 1, 0, 0)))
	assert.Equal(t, []string{"https://api.example"}, rdb.HKeys(ctx, countsKey).Val())
}

// TestThrottleStoreClockAhead checks that no process's clock rules the
// others': a process whose clock runs an hour ahead of Redis's writes
// steps and a Sent no further than a step beyond Redis's clock, so that
// its hosts do not outlive those of processes with correct clocks when the
// set is full (they score at most a step ahead of theirs), and its Sent
// does not stop the fleet's probes.
func TestThrottleStoreClockAhead(t *testing.T) {
	rdb := newClient(t, startRedis(t))
	real := &testClock{}
	real.ms.Store(time.Now().UnixMilli())
	ahead := &testClock{}
	ahead.ms.Store(real.ms.Load() + time.Hour.Milliseconds())
	honest := NewThrottleStore(rdb, "ahead", withClock(real), WithMaxHosts(2))
	fast := NewThrottleStore(rdb, "ahead", withClock(ahead), WithMaxHosts(2))
	width := testStep.Milliseconds()
	hostsKey := "{retryhttp:throttle:ahead}:hosts:" + strconv.FormatInt(width, 10)

	got := exchange(t, fast, sent(counts("fast.example", 1, 0, 0), ahead.ms.Load()))
	assert.LessOrEqual(t, got["https://fast.example"].Sent.UnixMilli(), time.Now().UnixMilli()+width, "the Sent a clock ahead wrote")
	for _, z := range rdb.ZRangeWithScores(context.Background(), hostsKey, 0, -1).Val() {
		assert.LessOrEqual(t, int64(z.Score), time.Now().UnixMilli()/width+1, "the step of %v", z.Member)
	}

	// The honest process's host, counted now, scores as the fast one's
	// does, at most a step behind: an hour ahead, the fast one's outlived
	// every host counted for an hour when the set was full.
	exchange(t, honest, counts("a.example", 1, 0, 0))
	scores := map[string]float64{}
	for _, z := range rdb.ZRangeWithScores(context.Background(), hostsKey, 0, -1).Val() {
		scores[z.Member.(string)] = z.Score
	}
	assert.LessOrEqual(t, scores["https://fast.example"]-scores["https://a.example"], 1.0, "steps between the two")
}

// TestThrottleStoreSharesSent checks that the store keeps the latest Sent
// it is given of a host, from any process, and returns it with the host's
// sums while the host has counts in the window; that a heal forgets it
// before its own applies; and that a host never given one has none.
func TestThrottleStoreSharesSent(t *testing.T) {
	ts := newKeyedStore(t, "sent")
	rdb, clock, countsKey := ts.rdb, ts.clock, ts.countsKey
	ctx := context.Background()
	other := NewThrottleStore(rdb, "sent", withClock(clock))
	at := clock.ms.Load()
	step := ts.step()

	// The latest of the fleet's, whichever process sent it; a host never
	// given one has none.
	assert.Equal(t, sums(sent(counts("api.example", 2, 0, 0), at-100), counts("b.example", 1, 0, 0)),
		exchange(t, ts, sent(counts("api.example", 2, 0, 0), at-100), counts("b.example", 1, 0, 0)))
	assert.Equal(t, fmt.Sprintf("%d 2 0 0 %d|%d 2 0 0", step, at-100, step), rdb.HGet(ctx, countsKey, "https://api.example").Val())
	assert.Equal(t, sums(sent(counts("api.example", 3, 0, 0), at-100), counts("b.example", 1, 0, 0)),
		exchange(t, other, sent(counts("api.example", 1, 0, 0), at-200)), "an earlier Sent replaced a later one")
	assert.Equal(t, sums(sent(counts("api.example", 4, 0, 0), at-50), counts("b.example", 1, 0, 0)),
		exchange(t, other, sent(counts("api.example", 1, 0, 0), at-50), sent(counts("api.example", 0, 0, 0), at-60)))
	assert.Equal(t, sums(sent(counts("api.example", 4, 0, 0), at-50), counts("b.example", 1, 0, 0)), exchange(t, ts))

	// An entry of no counts moves the Sent of a host with counts, and
	// names no host that has none.
	clock.advance(testStep)
	assert.Equal(t, sums(sent(counts("api.example", 4, 0, 0), at), counts("b.example", 1, 0, 0)),
		exchange(t, ts, sent(counts("api.example", 0, 0, 0), at), sent(counts("c.example", 0, 0, 0), at)))
	assert.ElementsMatch(t, []string{"https://api.example", "https://b.example"}, rdb.HKeys(ctx, countsKey).Val())

	// A heal forgets it, then its own Sent, if any, applies, and later
	// ones in the batch.
	assert.Equal(t, sums(counts("api.example", 1, 1, 0), counts("b.example", 1, 0, 0)),
		exchange(t, other, healed("api.example", 1, 1, 0)))
	assert.Equal(t, sums(sent(counts("api.example", 1, 1, 0), at-300), counts("b.example", 1, 0, 0)),
		exchange(t, ts, sent(counts("api.example", 5, 0, 0), at+100), sent(healed("api.example", 1, 1, 0), at-300)))
	assert.Equal(t, sums(sent(counts("api.example", 1, 0, 0), at-200), counts("b.example", 1, 0, 0)),
		exchange(t, ts, healed("api.example", 0, 0, 0), sent(counts("api.example", 1, 0, 0), at-200)))

	// A host whose counts have left the window returns nothing, Sent
	// included, and counted again starts with none.
	clock.advance(testWindow)
	assert.Empty(t, exchange(t, other))
	exchange(t, ts, sent(counts("api.example", 1, 0, 0), at+testWindow.Milliseconds()))
	clock.advance(testWindow)
	assert.Equal(t, sums(counts("api.example", 1, 0, 0)), exchange(t, ts, counts("api.example", 1, 0, 0)),
		"a Sent outlived the counts it came with")
}
