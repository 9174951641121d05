package throttling

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/retryhttp/retryhttp/internal/wire"
	"github.com/retryhttp/retryhttp/throttle"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// funcStore is a throttle.Store that calls its function.
type funcStore func(ctx context.Context, window time.Duration, counts []throttle.Counts) ([]throttle.Counts, error)

func (f funcStore) Exchange(ctx context.Context, window time.Duration, counts []throttle.Counts) ([]throttle.Counts, error) {
	return f(ctx, window, counts)
}

// TestFleetCountsStartTheRefusals checks that a host the fleet counts
// failures of is refused requests from the exchange that brings the
// counts, before this process sent it any, and that the first request
// refused finds the start of the refusals.
func TestFleetCountsStartTheRefusals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := funcStore(func(context.Context, time.Duration, []throttle.Counts) ([]throttle.Counts, error) {
			return []throttle.Counts{{Scheme: "http", Host: "down.test", Attempts: 100}}, nil
		})
		f := newFixture(0, always(false), throttle.Shared(store))
		// An exchange at the Throttler's zero time would bring counts
		// taken for none (fleetAt 0): time moves on first.
		time.Sleep(time.Millisecond)
		f.get("http://up.test/") // starts the exchanges
		synctest.Wait()
		p, counted := f.rejection("down.test")
		require.True(t, counted, "adopted from the fleet's counts")
		assert.InDelta(t, 0.9, p, 1e-9)
		assert.True(t, f.get("http://down.test/"), "refused")
		assert.Equal(t, []told{{Started, wire.HostKey{Scheme: "http", Host: "down.test"}, 0.9}}, f.changes)
		assert.Zero(t, f.attempts["down.test"])
		time.Sleep(11 * time.Second) // the exchanges end
	})
}

// TestStorePanicIsReportedOnce checks that a Store whose Exchange panics
// fails the exchange, which the Throttler survives, reporting the first
// panic to Env.StorePanicked and no other.
func TestStorePanicIsReportedOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		calls := 0
		store := funcStore(func(context.Context, time.Duration, []throttle.Counts) ([]throttle.Counts, error) {
			mu.Lock()
			calls++
			mu.Unlock()
			panic("store bug")
		})
		f := newFixture(0.95, always(true), throttle.Shared(store))
		for range 30 {
			f.get("http://svc.test/")
			time.Sleep(100 * time.Millisecond)
		}
		p, _ := f.rejection("svc.test")
		assert.Positive(t, p, "throttled on its own counts")
		mu.Lock()
		assert.Greater(t, calls, 1, "exchanges went on")
		mu.Unlock()
		assert.Equal(t, []any{"store bug"}, f.panics)
		time.Sleep(11 * time.Second) // the exchanges end
	})
}

// TestFleetSentAhead checks how a Sent the fleet gives is taken, at now:
// as it is up to now, as now up to a tenth of a step ahead, and further
// ahead as a probe's interval ago, from the exchange that first brings it
// until a later one comes.
func TestFleetSentAhead(t *testing.T) {
	th := New(nil, Env{Now: time.Now}) // steps of 500 ms: a probe's interval is 1 s
	step := int64(th.width)
	interval := probeSteps * step
	now := 100 * step
	var h Host
	assert.Equal(t, int64(0), th.fleetSent(&h, 0, now), "none")
	assert.Equal(t, now-step, th.fleetSent(&h, now-step, now), "a step ago")
	assert.Equal(t, now, th.fleetSent(&h, now+step/10, now), "a tenth of a step ahead")
	ahead := now + step
	assert.Equal(t, now-interval, th.fleetSent(&h, ahead, now), "a step ahead")
	assert.Equal(t, ahead, h.ahead)
	later := now + 3*step
	assert.Equal(t, later-interval, th.fleetSent(&h, ahead, later), "the same Sent, once the clock passed it")
	assert.Equal(t, later-step, th.fleetSent(&h, later-step, later), "a later Sent")
}

// TestAdoptsHalfATableAtMost checks that the hosts the fleet counts
// failures of and this process never requested take half its table at
// most, in one new table an exchange, and never push its own hosts out.
func TestAdoptsHalfATableAtMost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		foreign := make([]throttle.Counts, 3*MaxHosts)
		for i := range foreign {
			foreign[i] = throttle.Counts{Scheme: "http", Host: "f" + strconv.Itoa(i) + ".test", Attempts: 10}
		}
		store := funcStore(func(context.Context, time.Duration, []throttle.Counts) ([]throttle.Counts, error) {
			return foreign, nil
		})
		f := newFixture(0.95, always(false), throttle.Shared(store))
		for i := range MaxHosts / 4 {
			f.get("http://own" + strconv.Itoa(i) + ".test/")
		}
		for range 10 {
			time.Sleep(time.Second) // exchanges
			f.get("http://own0.test/")
		}
		adopted, own := 0, 0
		for h := range f.th.hosts.Load().all() {
			if h.adopted {
				adopted++
			} else {
				own++
			}
		}
		assert.Equal(t, MaxHosts/2, adopted)
		assert.Equal(t, MaxHosts/4, own, "every host of its own stays")
		time.Sleep(11 * time.Second) // the exchanges end
	})
}

// TestExchangeIgnoresNonsense checks that counts no Store should return
// (negative, more accepts than attempts, no host, beyond any fleet's
// counts) are ignored: the host is throttled on its own counts.
func TestExchangeIgnoresNonsense(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := funcStore(func(context.Context, time.Duration, []throttle.Counts) ([]throttle.Counts, error) {
			return []throttle.Counts{
				{Scheme: "http", Host: "svc.test", Attempts: -5},
				{Scheme: "http", Host: "svc.test", Attempts: 1, Accepted: 9},
				{Scheme: "http", Host: "", Attempts: 9},
				{Scheme: "http", Host: "bad.test", Attempts: 1 << 62, Refused: 1 << 62},
			}, nil
		})
		f := newFixture(0.95, always(true), throttle.Shared(store))
		f.gets("http://svc.test/", 10)
		time.Sleep(time.Second)
		p, _ := f.rejection("svc.test")
		assert.Zero(t, p, "fewer than 20 failures")
		_, counted := f.rejection("bad.test")
		assert.False(t, counted, "bad.test")
		req, _ := http.NewRequest(http.MethodGet, "http://svc.test/", nil)
		_, _, ok, _ := f.th.Admit(req)
		assert.True(t, ok)
		time.Sleep(11 * time.Second) // the exchanges end
	})
}
