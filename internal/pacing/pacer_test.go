package pacing

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/retryhttp/retryhttp/internal/config"
	"github.com/retryhttp/retryhttp/internal/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	keyA = Key{Host: wire.MakeKey("https", "a.example.com")}
	keyB = Key{Host: wire.MakeKey("https", "b.example.com")}
)

func newPacer() *Pacer { return New(config.NewPace()) }

func after(d time.Duration) time.Time { return testNow.Add(d) }

// sendAt observes, for k, n responses with status to requests sent every
// gap from start, each answered a millisecond later, and returns the last
// change.
func sendAt(p *Pacer, k Key, start time.Time, gap time.Duration, n, status int, h http.Header) Change {
	var c Change
	for i := range n {
		sent := start.Add(time.Duration(i) * gap)
		c = p.Observe(k, sent, sent.Add(time.Millisecond), status, h)
	}
	return c
}

func TestUnpacedKeysWaitForNothing(t *testing.T) {
	p := newPacer()
	turn, wait, ok := p.Reserve(keyA, testNow, 0)
	assert.True(t, ok)
	assert.Zero(t, wait)
	assert.Equal(t, Turn{}, turn)
	assert.Zero(t, turn.Wait(testNow), "a zero Turn is due")
	turn.Release(testNow)

	sendAt(p, keyA, testNow, 10*time.Millisecond, 100, http.StatusOK, nil)
	_, wait, ok = p.Reserve(keyA, after(time.Second), 0)
	assert.True(t, ok)
	assert.Zero(t, wait, "200s never pace")
	assert.Zero(t, p.Paced(after(time.Second)))

	allocs := testing.AllocsPerRun(100, func() { p.Reserve(keyA, testNow, time.Second) })
	assert.Zero(t, allocs, "Reserve while no key is paced")

	p.Observe(keyB, testNow, testNow, http.StatusTooManyRequests, nil)
	require.Equal(t, 1, p.Paced(testNow))
	_, wait, ok = p.Reserve(keyA, after(time.Second), 0)
	assert.True(t, ok)
	assert.Zero(t, wait, "a key not paced beside one paced")
	allocs = testing.AllocsPerRun(100, func() { p.Reserve(keyA, testNow, time.Second) })
	assert.Zero(t, allocs, "Reserve for a key not paced beside one paced")
}

func TestWhatMakesAKeyPaced(t *testing.T) {
	for _, tt := range []struct {
		name   string
		status int
		h      http.Header
		paced  bool
	}{
		{"200", http.StatusOK, nil, false},
		{"500", http.StatusInternalServerError, nil, false},
		{"503 without Retry-After", http.StatusServiceUnavailable, nil, false},
		{"503 with Retry-After", http.StatusServiceUnavailable, header("Retry-After", "1"), true},
		{"429", http.StatusTooManyRequests, nil, true},
		{"429 with an unreadable Retry-After", http.StatusTooManyRequests, header("Retry-After", "soon"), true},
		{"200 with a quota spent", http.StatusOK, header("X-Ratelimit-Remaining", "0", "X-Ratelimit-Reset", "30"), true},
		{"200 with a tenth of a quota left", http.StatusOK, header("X-Ratelimit-Remaining", "10", "X-Ratelimit-Limit", "100", "X-Ratelimit-Reset", "30"), true},
		{"200 with half a quota left", http.StatusOK, header("X-Ratelimit-Remaining", "50", "X-Ratelimit-Limit", "100", "X-Ratelimit-Reset", "30"), false},
		{"200 with a quota and no limit", http.StatusOK, header("X-Ratelimit-Remaining", "3", "X-Ratelimit-Reset", "30"), false},
		{"403 with a quota spent (GitHub)", http.StatusForbidden, header("X-Ratelimit-Remaining", "0", "X-Ratelimit-Reset", "30"), true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := newPacer()
			c := p.Observe(keyA, testNow, after(time.Millisecond), tt.status, tt.h)
			want := None
			if tt.paced {
				want = Started
			}
			assert.Equal(t, want, c.Event, "Observe: event")
			assert.Equal(t, map[bool]int{true: 1}[tt.paced], p.Paced(testNow), "Paced")
		})
	}
}

func TestRetryAfterComesFirst(t *testing.T) {
	for _, tt := range []struct {
		name string
		h    http.Header
		want time.Duration
	}{
		{"seconds", header("Retry-After", "5"), 5 * time.Second},
		{"an HTTP-date, against the response's Date", header("Retry-After", "Wed, 04 Mar 2026 12:00:20 GMT", "Date", "Wed, 04 Mar 2026 12:00:12 GMT"), 8 * time.Second},
		{"milliseconds", header("Retry-After-Ms", "2500"), 2500 * time.Millisecond},
		{"the longest of several", header("Retry-After", "3", "X-Ms-Retry-After-Ms", "4000"), 4 * time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := newPacer()
			sendAt(p, keyA, after(-time.Second), 20*time.Millisecond, 50, http.StatusOK, nil)
			p.Observe(keyA, testNow, testNow, http.StatusTooManyRequests, tt.h)
			_, wait, ok := p.Reserve(keyA, testNow, time.Minute)
			assert.True(t, ok)
			assert.GreaterOrEqual(t, wait, tt.want, "no turn before the Retry-After ends")
			assert.Less(t, wait, tt.want+time.Second)

			_, wait, ok = p.Reserve(keyA, testNow, time.Second)
			assert.False(t, ok, "a wait past the Retry-After's end is more than the second allowed")
			assert.Greater(t, wait, time.Second, "the wait it would have been")
		})
	}
}

func TestAWaitGivenNeverExceedsTheLimit(t *testing.T) {
	p := newPacer()
	sendAt(p, keyA, after(-time.Second), 10*time.Millisecond, 100, http.StatusOK, nil)
	p.Observe(keyA, testNow, testNow, http.StatusTooManyRequests, nil)
	given, refused := 0, 0
	for i := range 1000 {
		now := after(time.Duration(i) * time.Millisecond)
		limit := time.Duration(i%300) * time.Millisecond
		_, wait, ok := p.Reserve(keyA, now, limit)
		if ok {
			given++
			assert.LessOrEqual(t, wait, limit, "turn %d", i)
		} else {
			refused++
			assert.Greater(t, wait, limit, "turn %d refused", i)
		}
	}
	assert.Positive(t, given)
	assert.Positive(t, refused)
}

func TestReleaseGivesTheSlotBack(t *testing.T) {
	p := newPacer()
	sendAt(p, keyA, after(-time.Second), 10*time.Millisecond, 100, http.StatusOK, nil)
	p.Observe(keyA, testNow, testNow, http.StatusTooManyRequests, nil)
	_, _, _ = p.Reserve(keyA, testNow, time.Minute)
	b, waitB, ok := p.Reserve(keyA, testNow, time.Minute)
	require.True(t, ok)
	require.Positive(t, waitB)
	b.Release(after(time.Millisecond))
	_, waitC, ok := p.Reserve(keyA, testNow, time.Minute)
	require.True(t, ok)
	assert.Equal(t, waitB, waitC, "the turn after takes the slot given back")
}

func TestAThrottleCutsOnceARound(t *testing.T) {
	p := newPacer()
	sendAt(p, keyA, after(-2*time.Second), 10*time.Millisecond, 200, http.StatusOK, nil) // 100 a second
	c := p.Observe(keyA, after(-5*time.Millisecond), testNow, http.StatusTooManyRequests, nil)
	require.Equal(t, Started, c.Event)
	assert.InDelta(t, beta*100, c.Rate, 5, "cut to beta of the rate sent at")
	first := c.Rate
	for i := range 5 { // responses to requests sent before the cut
		c = p.Observe(keyA, after(-time.Duration(4-i)*time.Millisecond), after(time.Duration(i)*time.Millisecond), http.StatusTooManyRequests, nil)
		assert.Equal(t, None, c.Event)
		assert.InDelta(t, first, c.Rate, 1, "the same round: no second cut")
	}
	c = p.Observe(keyA, after(500*time.Millisecond), after(501*time.Millisecond), http.StatusTooManyRequests, nil)
	assert.Less(t, c.Rate, first, "a request sent after the round: another cut")
}

func TestAKeyQuietFor30sStopsBeingPaced(t *testing.T) {
	p := newPacer()
	p.Observe(keyA, testNow, testNow, http.StatusTooManyRequests, header("Retry-After", "1"))
	require.Equal(t, 1, p.Paced(testNow))
	assert.Equal(t, 1, p.Paced(after(30*time.Second)))
	assert.Zero(t, p.Paced(after(31*time.Second)), "the gauge counts a key quiet for 30s out")
	_, wait, ok := p.Reserve(keyA, after(31*time.Second), 0)
	assert.True(t, ok)
	assert.Zero(t, wait, "a key quiet for 30s waits for nothing")

	c := p.Observe(keyA, after(31*time.Second), after(31*time.Second), http.StatusOK, nil)
	assert.Equal(t, Stopped, c.Event, "its next response reports it")
	c = p.Observe(keyA, after(32*time.Second), after(32*time.Second), http.StatusOK, nil)
	assert.Equal(t, None, c.Event)
	c = p.Observe(keyA, after(33*time.Second), after(33*time.Second), http.StatusTooManyRequests, nil)
	assert.Equal(t, Started, c.Event, "throttled again, paced again")
}

func TestMaxHostsBoundsTheKeys(t *testing.T) {
	p := New(config.Pace{MaxHosts: 2})
	p.Observe(keyA, testNow, testNow, http.StatusTooManyRequests, nil)
	p.Observe(keyB, testNow, testNow, http.StatusTooManyRequests, nil)
	require.Equal(t, 2, p.Paced(testNow))
	p.Observe(keyB, testNow, testNow, http.StatusOK, nil) // b used since a
	keyC := Key{Host: wire.MakeKey("https", "c.example.com")}
	p.Observe(keyC, testNow, testNow, http.StatusOK, nil)
	assert.Equal(t, int64(2), p.keys.n.Load(), "at most MaxHosts keys")
	assert.Equal(t, 1, p.Paced(testNow), "a, least recently used, forgotten")
	assert.Equal(t, int64(1), p.paced.Load())
	_, wait, _ := p.Reserve(keyA, testNow, time.Minute)
	assert.Zero(t, wait, "a key forgotten starts afresh, not paced")
}

func TestPartitionsArePacedApart(t *testing.T) {
	p := newPacer()
	one, two := keyA, keyA
	one.Partition, two.Partition = 1, 2
	p.Observe(one, testNow, testNow, http.StatusTooManyRequests, header("Retry-After", "10"))
	_, wait, _ := p.Reserve(one, testNow, time.Minute)
	assert.GreaterOrEqual(t, wait, 10*time.Second)
	_, wait, _ = p.Reserve(two, testNow, time.Minute)
	assert.Zero(t, wait, "another partition of the host")
}

func TestAWindowIsSpreadOverWhatIsLeftOfIt(t *testing.T) {
	p := newPacer()
	c := p.Observe(keyA, testNow, testNow, http.StatusOK,
		header("X-Ratelimit-Remaining", "10", "X-Ratelimit-Limit", "5000", "X-Ratelimit-Reset", unix(100*time.Second)))
	require.Equal(t, Started, c.Event)
	assert.InDelta(t, 0.1, c.Rate, 0.001, "10 left for 100s: one each 10s")
	_, wait1, _ := p.Reserve(keyA, testNow, time.Minute)
	_, wait2, _ := p.Reserve(keyA, testNow, time.Minute)
	assert.Zero(t, wait1)
	assert.InDelta(t, 10*time.Second, wait2, float64(time.Millisecond))
}

func TestASpentWindowHoldsUntilItEnds(t *testing.T) {
	p := newPacer()
	p.Observe(keyA, testNow, testNow, http.StatusForbidden,
		header("X-Ratelimit-Remaining", "0", "X-Ratelimit-Limit", "5000", "X-Ratelimit-Reset", unix(30*time.Second)))
	_, wait, ok := p.Reserve(keyA, testNow, time.Minute)
	assert.True(t, ok)
	assert.Equal(t, 30*time.Second, wait)
	_, _, ok = p.Reserve(keyA, testNow, 10*time.Second)
	assert.False(t, ok, "30s is more than the 10s allowed")
}

func TestAPolicyCapsTheRate(t *testing.T) {
	p := newPacer()
	c := p.Observe(keyA, testNow, testNow, http.StatusOK,
		header("Ratelimit", `"default";r=0;t=1`, "Ratelimit-Policy", `"default";q=10;w=1`))
	require.Equal(t, Started, c.Event)
	c = p.Observe(keyA, after(time.Second), after(time.Second), http.StatusTooManyRequests,
		header("Ratelimit", `"default";r=5;t=1`, "Ratelimit-Policy", `"default";q=10;w=1`))
	assert.LessOrEqual(t, c.Rate, 10.0, "never above q/w")
	assert.Positive(t, c.Rate)
}

func TestATurnPutOffIsToldWhenItWakes(t *testing.T) {
	p := newPacer()
	sendAt(p, keyA, after(-time.Second), 10*time.Millisecond, 100, http.StatusOK, nil)
	p.Observe(keyA, testNow, testNow, http.StatusTooManyRequests, nil)
	var turns []Turn
	for range 20 {
		turn, _, ok := p.Reserve(keyA, testNow, time.Minute)
		require.True(t, ok)
		turns = append(turns, turn)
	}
	last := turns[len(turns)-1]
	before := last.Wait(testNow)
	p.Observe(keyA, after(time.Millisecond), after(2*time.Millisecond), http.StatusTooManyRequests, header("Retry-After", "30"))
	assert.GreaterOrEqual(t, last.Wait(after(2*time.Millisecond)), 30*time.Second-2*time.Millisecond, "held by the Retry-After: was %v", before)
}

func TestConcurrentUse(t *testing.T) {
	p := New(config.Pace{MaxHosts: 3})
	keys := []Key{keyA, keyB, {Host: wire.MakeKey("http", "c")}, {Host: wire.MakeKey("http", "d")}}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 500 {
				k := keys[(g+i)%len(keys)]
				now := after(time.Duration(i) * time.Millisecond)
				turn, _, ok := p.Reserve(k, now, 100*time.Millisecond)
				if ok && turn.Wait(now.Add(time.Millisecond)) > 50*time.Millisecond {
					turn.Release(now)
				}
				status := http.StatusOK
				if i%7 == 0 {
					status = http.StatusTooManyRequests
				}
				p.Observe(k, now, now.Add(time.Millisecond), status, nil)
				p.Paced(now)
			}
		}()
	}
	wg.Wait()
	assert.LessOrEqual(t, p.keys.n.Load(), int64(3))
	assert.Equal(t, int64(p.Paced(after(500*time.Millisecond))), p.paced.Load())
}

func BenchmarkReserve(b *testing.B) {
	b.Run("no key paced", func(b *testing.B) {
		p := newPacer()
		sendAt(p, keyA, testNow, time.Millisecond, 10, http.StatusOK, nil)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				p.Reserve(keyA, testNow, time.Second)
			}
		})
	})
	b.Run("a key not paced beside one paced", func(b *testing.B) {
		p := newPacer()
		sendAt(p, keyA, testNow, time.Millisecond, 10, http.StatusOK, nil)
		p.Observe(keyB, testNow, testNow, http.StatusTooManyRequests, nil)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				p.Reserve(keyA, testNow, time.Second)
			}
		})
	})
	b.Run("a key paced", func(b *testing.B) {
		p := newPacer()
		sendAt(p, keyA, after(-time.Second), time.Microsecond, 1000, http.StatusOK, nil)
		p.Observe(keyA, testNow, testNow, http.StatusTooManyRequests, nil)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i++
			// A millisecond of turns at a time, each refused once the
			// schedule runs a millisecond ahead.
			p.Reserve(keyA, testNow.Add(time.Duration(i)*time.Microsecond), time.Millisecond)
		}
	})
}

func BenchmarkObserve(b *testing.B) {
	for _, tt := range []struct {
		name string
		h    http.Header
	}{
		{"200, no quota", http.Header{"Content-Type": {"application/json"}}},
		{"200, a quota", header("X-Ratelimit-Remaining", "4999", "X-Ratelimit-Limit", "5000", "X-Ratelimit-Reset", unix(time.Hour))},
	} {
		b.Run(tt.name, func(b *testing.B) {
			p := newPacer()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				now := testNow.Add(time.Duration(i) * time.Microsecond)
				p.Observe(keyA, now, now, http.StatusOK, tt.h)
			}
		})
	}
}

func ExamplePacer() {
	p := New(config.NewPace())
	k := Key{Host: wire.MakeKey("https", "api.example.com")}
	now := testNow
	p.Observe(k, now, now, http.StatusTooManyRequests, http.Header{"Retry-After": {"2"}})
	_, wait, ok := p.Reserve(k, now, 10*time.Second)
	fmt.Println(wait, ok)
	_, wait, ok = p.Reserve(k, now, time.Second)
	fmt.Println(wait > time.Second, ok)
	// Output:
	// 2s true
	// true false
}

// TestARetryAfterOfASecondOnlyCutsALearnedRate: once a key is paced at a
// rate learned from its throttles, a Retry-After of a second cuts the rate
// without holding every turn for the second; a longer one still holds
// them.
func TestARetryAfterOfASecondOnlyCutsALearnedRate(t *testing.T) {
	for _, tt := range []struct {
		retryAfter string
		held       bool
	}{{"1", false}, {"2", true}} {
		t.Run("Retry-After "+tt.retryAfter, func(t *testing.T) {
			p := newPacer()
			sendAt(p, keyA, after(-2*time.Second), 20*time.Millisecond, 50, http.StatusOK, nil)
			p.Observe(keyA, after(-time.Second), after(-time.Second), http.StatusTooManyRequests, nil) // a rate is learned
			sendAt(p, keyA, after(-900*time.Millisecond), 20*time.Millisecond, 45, http.StatusOK, nil)
			p.Observe(keyA, testNow, testNow, http.StatusTooManyRequests, header("Retry-After", tt.retryAfter))
			_, wait, ok := p.Reserve(keyA, testNow, time.Minute)
			require.True(t, ok)
			if tt.held {
				assert.GreaterOrEqual(t, wait, 2*time.Second)
			} else {
				assert.Less(t, wait, 500*time.Millisecond, "the cut, not the whole second")
			}
		})
	}
}

func TestSignals(t *testing.T) {
	for _, tt := range []struct {
		name   string
		status int
		h      http.Header
		want   bool
	}{
		{"a 429", http.StatusTooManyRequests, nil, true},
		{"a 503 with Retry-After", http.StatusServiceUnavailable, header("Retry-After", "1"), true},
		{"a 503 without Retry-After is a failure, not a throttle", http.StatusServiceUnavailable, nil, false},
		{"a quota spent", http.StatusOK, header("X-Ratelimit-Remaining", "0"), true},
		{"a tenth left", http.StatusOK, header("X-Ratelimit-Remaining", "10", "X-Ratelimit-Limit", "100"), true},
		{"the IETF fields spent", http.StatusOK, header("Ratelimit", `"d";r=0;t=1`), true},
		{"a quota far from spent says nothing yet", http.StatusOK, header("X-Ratelimit-Remaining", "4000", "X-Ratelimit-Limit", "5000"), false},
		{"nor one without a limit, not spent", http.StatusOK, header("Ratelimit", `"d";r=1;t=1`), false},
		{"no quota", http.StatusOK, header("Content-Type", "text/plain"), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// A Pacer of its own: the first answer of a host is always read.
			assert.Equal(t, tt.want, newPacer().Signals(("api.test"), tt.status, tt.h))
		})
	}
}

// TestSignalsSkipsAtMostItsBound holds the bound of the readings Signals
// skips: a host that announces a quota far from spent has its fields read
// on one answer in maxSkip+1, one that comes near the end sooner, and a
// quota that turns low is seen within the skips its last reading allowed;
// throttles are never skipped.
func TestSignalsSkipsAtMostItsBound(t *testing.T) {
	p := newPacer()
	far := header("X-Ratelimit-Remaining", "4000", "X-Ratelimit-Limit", "5000")
	reads := 0
	for range 10 * (maxSkip + 1) {
		skipsBefore := p.skips[SlotOf("api.test")].Load()
		p.Signals(("api.test"), http.StatusOK, far)
		if skipsBefore == 0 {
			reads++
		}
	}
	assert.Equal(t, 10, reads, "one answer in maxSkip+1 read while the quota is far")

	// 600 left above a tenth of 5000: 600/skipRoom = 9 answers skip.
	near := header("X-Ratelimit-Remaining", "1100", "X-Ratelimit-Limit", "5000")
	q := newPacer()
	require.False(t, q.Signals(("api.test"), http.StatusOK, near))
	assert.Equal(t, int32(600/skipRoom), q.skips[SlotOf("api.test")].Load())
	spent := header("X-Ratelimit-Remaining", "0", "X-Ratelimit-Limit", "5000")
	seen := 0
	for i := 1; i <= 600/skipRoom+1; i++ {
		if q.Signals(("API.test:443"), http.StatusOK, spent) {
			seen = i
			break
		}
	}
	assert.Equal(t, 600/skipRoom+1, seen, "the spent quota read on the first answer its room does not cover, whatever the host's case and port")
	assert.True(t, q.Signals(("api.test"), http.StatusTooManyRequests, nil), "a throttle is never skipped")
	assert.True(t, newPacer().Signals(("other.test"), http.StatusOK, spent), "another host's skips are its own")
}

func TestKnows(t *testing.T) {
	p := newPacer()
	assert.False(t, p.KnowsAny())
	assert.False(t, p.Knows(keyA))
	p.Observe(keyA, testNow, testNow, http.StatusTooManyRequests, nil)
	assert.True(t, p.KnowsAny())
	assert.True(t, p.Knows(keyA))
	assert.False(t, p.Knows(keyB))
}

// TestADeclaredQuotaPacesFromTheFirstRequest: a key whose host has a quota
// declared is paced at it from its first Reserve, each partition apart,
// never faster whatever its responses say, and for as long as it is known;
// another host waits for nothing.
func TestADeclaredQuotaPacesFromTheFirstRequest(t *testing.T) {
	c := config.NewPace()
	c.Quotas = map[string]float64{"a.example.com": 10}
	p := New(c)
	require.True(t, p.Pacing())
	for i := range 5 {
		_, wait, ok := p.Reserve(keyA, testNow, time.Minute)
		require.True(t, ok)
		assert.Equal(t, time.Duration(i)*100*time.Millisecond, wait, "turn %d at 10 a second", i)
	}
	_, wait, _ := p.Reserve(Key{Host: keyA.Host, Partition: 7}, testNow, time.Minute)
	assert.Zero(t, wait, "another partition has a pace of its own")
	_, wait, _ = p.Reserve(keyB, testNow, time.Minute)
	assert.Zero(t, wait, "a host without a quota declared")

	p.Observe(keyA, testNow, after(time.Millisecond), http.StatusOK, header("X-Ratelimit-Remaining", "1000", "X-Ratelimit-Limit", "1000", "X-Ratelimit-Reset", "1"))
	later := after(time.Hour)
	assert.Equal(t, None, p.Observe(keyA, later, later, http.StatusOK, nil).Event, "a declared key is never stopped")
	assert.Equal(t, 2, p.Paced(later), "both partitions")
	_, w1, _ := p.Reserve(keyA, later, time.Minute)
	_, w2, _ := p.Reserve(keyA, later, time.Minute)
	assert.Equal(t, 100*time.Millisecond, w2-w1, "at the quota declared, though a larger one was announced")
}

// TestANewPartitionCostsO1Allocations: with 1,000 partitions known, a new
// one copies only its shard of the table, not the table.
func TestANewPartitionCostsO1Allocations(t *testing.T) {
	p := New(config.Pace{MaxHosts: 4096})
	for i := range 1000 {
		p.Observe(Key{Host: keyA.Host, Partition: uint64(i+1) * 0x9e3779b97f4a7c15}, testNow, testNow, http.StatusTooManyRequests, nil)
	}
	i := uint64(5000)
	allocs := testing.AllocsPerRun(100, func() {
		i++
		p.Observe(Key{Host: keyA.Host, Partition: i * 0x9e3779b97f4a7c15}, testNow, testNow, http.StatusTooManyRequests, nil)
	})
	assert.LessOrEqual(t, allocs, 8.0, "allocations for a new partition")
	var seen int
	p.keys.each(func(Key, *state) bool { seen++; return true })
	assert.Equal(t, 1101, seen)
}

// BenchmarkNewPartition measures a partition first seen by a Pacer that
// knows 1,000.
func BenchmarkNewPartition(b *testing.B) {
	p := New(config.Pace{MaxHosts: 1 << 20})
	for i := range 1000 {
		p.Observe(Key{Host: keyA.Host, Partition: uint64(i+1) * 0x9e3779b97f4a7c15}, testNow, testNow, http.StatusTooManyRequests, nil)
	}
	i := uint64(1 << 32)
	b.ReportAllocs()
	for b.Loop() {
		i++
		p.Observe(Key{Host: keyA.Host, Partition: i * 0x9e3779b97f4a7c15}, testNow, testNow, http.StatusTooManyRequests, nil)
	}
}

// TestMayKnowAnswersForTheHostAsTheURLWritesIt: the filter of hosts finds
// a key's host however its URL writes it (case, a port), and says no for
// a host no key is of; a host's ports share its answer, which Knows tells
// apart.
func TestMayKnowAnswersForTheHostAsTheURLWritesIt(t *testing.T) {
	p := newPacer()
	for _, raw := range []string{"API.Example.com:443", "svc.test:8080", "Other.TEST:80"} {
		scheme := "https"
		if raw == "Other.TEST:80" {
			scheme = "http"
		}
		assert.False(t, p.MayKnow(SlotOf(raw)), "%s before", raw)
		p.Observe(Key{Host: wire.MakeKey(scheme, raw)}, testNow, testNow, http.StatusTooManyRequests, nil)
		assert.True(t, p.MayKnow(SlotOf(raw)), raw)
	}
	assert.True(t, p.MayKnow(SlotOf("api.example.com")))
	assert.True(t, p.MayKnow(SlotOf("other.test")))
	assert.True(t, p.MayKnow(SlotOf("svc.test")), "another port may be known")
	assert.False(t, p.Knows(Key{Host: wire.MakeKey("https", "svc.test")}), "and is not")
	assert.False(t, p.MayKnow(SlotOf("none.test")))
	assert.False(t, p.MayKnow(SlotOf("[::1]:8080")))
	p.Observe(Key{Host: wire.MakeKey("http", "[::1]:8080")}, testNow, testNow, http.StatusTooManyRequests, nil)
	assert.True(t, p.MayKnow(SlotOf("[::1]:8080")), "an IPv6 literal")
}

// TestThrottleTheQuotaExplainsCutsNothing: the throttles of requests sent
// before the key's quota was known (a burst sent before any answer said
// it) cut no rate, the quota's answers pacing the key; a throttle of a
// request sent after does.
func TestThrottleTheQuotaExplainsCutsNothing(t *testing.T) {
	p := newPacer()
	h := header("X-Ratelimit-Limit-Requests", "10", "X-Ratelimit-Remaining-Requests", "0",
		"X-Ratelimit-Reset-Requests", "200ms", "Retry-After", "1")
	sent := testNow
	p.Observe(keyA, sent, sent.Add(time.Millisecond), http.StatusTooManyRequests, h)
	p.Observe(keyA, sent, sent.Add(2*time.Millisecond), http.StatusTooManyRequests, h)
	st := p.lookup(keyA)
	st.mu.Lock()
	assert.False(t, st.cut, "a throttle of the burst sent before the quota was known")
	assert.InDelta(t, 0.75*47.5, st.rate(st.ns(sent.Add(2*time.Millisecond))), 0.5, "the bucket's refill, its level at nothing")
	st.mu.Unlock()

	later := sent.Add(10 * time.Millisecond)
	p.Observe(keyA, later, later.Add(time.Millisecond), http.StatusTooManyRequests, h)
	st.mu.Lock()
	defer st.mu.Unlock()
	assert.True(t, st.cut, "a throttle of a request sent once the quota was known")
}
