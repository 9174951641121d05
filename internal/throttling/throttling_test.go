package throttling

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/retryhttp/retryhttp/classify"
	"github.com/retryhttp/retryhttp/internal/wire"
	"github.com/retryhttp/retryhttp/throttle"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNewAppliesOptionsOverTheDefaults(t *testing.T) {
	def := New(nil, Env{Now: time.Now}).Config()
	assert.Equal(t, 2.0, def.Multiplier)
	assert.Equal(t, 10*time.Second, def.Window)
	assert.Equal(t, 0.9, def.MaxRejection)
	assert.Equal(t, 20, def.MinRequests)
	assert.Nil(t, def.Store)

	th := New([]throttle.Option{throttle.Multiplier(3), throttle.Window(time.Second),
		throttle.MaxRejection(0.5), throttle.MinRequests(7)}, Env{Now: time.Now})
	assert.Equal(t, 3.0, th.k)
	assert.Equal(t, time.Second/buckets, th.width)
	assert.Equal(t, 0.5, th.maxReject)
	assert.Equal(t, int64(7), th.minRequests)
}

func TestProbabilityIsTheSREFormula(t *testing.T) {
	// A random source that never refuses (0.999 is above the highest
	// probability): the window holds exactly the outcomes sent.
	tests := []struct {
		name           string
		opts           []throttle.Option
		fails, accepts int
		want           float64
	}{
		{name: "no failure", accepts: 30, want: 0},
		{name: "fewer requests than the minimum", fails: 19, want: 0},
		{name: "every request failing, capped", fails: 30, want: 0.9},
		{name: "12 of 20 failing", fails: 12, accepts: 8, want: (20 - 2*8) / 21.0},
		{name: "half failing", fails: 10, accepts: 10, want: 0},
		{name: "K = 3", opts: []throttle.Option{throttle.Multiplier(3)}, fails: 16, accepts: 4, want: (20 - 3*4) / 21.0},
		{name: "K = 1", opts: []throttle.Option{throttle.Multiplier(1)}, fails: 5, accepts: 15, want: 5 / 21.0},
		{name: "higher cap", opts: []throttle.Option{throttle.MaxRejection(0.99)}, fails: 40, want: 40 / 41.0},
		{name: "lower minimum", opts: []throttle.Option{throttle.MinRequests(1)}, fails: 1, want: 0.5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				// Failures first, so that the host is counted before its
				// accepts.
				f := newFixture(0.999, failFirst(tt.fails), tt.opts...)
				assert.Zero(t, f.gets("http://svc.test/", tt.fails+tt.accepts), "refused")
				assert.Equal(t, tt.fails+tt.accepts, f.attempts["svc.test"], "attempts sent")
				p, counted := f.rejection("svc.test")
				assert.True(t, counted, "host counted")
				assert.InDelta(t, tt.want, p, 1e-9)
			})
		})
	}
}

func TestRefusalsAreNoEvidence(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// 14 failures and 10 accepts: (24 - 20) / 25 = 0.16; a refusal
		// changes nothing.
		f := newFixture(0.95, failFirst(14))
		require.Zero(t, f.gets("http://svc.test/", 24))
		p, _ := f.rejection("svc.test")
		require.InDelta(t, 4/25.0, p, 1e-9)
		f.rand = 0
		for i := 1; i <= 3; i++ {
			require.True(t, f.get("http://svc.test/"), "refused")
			p, _ := f.rejection("svc.test")
			assert.InDelta(t, 4/25.0, p, 1e-9, "after %d refusals", i)
		}
		assert.Equal(t, 24, f.attempts["svc.test"])
	})
}

func TestRefusalsCountTowardsMinRequests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// 20 failures start the refusals; once 16 of them left the window,
		// the 4 failures left and 16 refusals still make 20.
		f := newFixture(0.95, always(true), throttle.Window(time.Second))
		f.gets("http://svc.test/", 16)
		time.Sleep(500 * time.Millisecond)
		f.gets("http://svc.test/", 4)
		f.rand = 0
		require.Equal(t, 16, f.gets("http://svc.test/", 16), "refused")
		time.Sleep(500 * time.Millisecond)
		p, _ := f.rejection("svc.test")
		assert.InDelta(t, 0.8, p, 1e-9, "4 failures and 16 refusals: 4 / 5")
		time.Sleep(500 * time.Millisecond)
		p, _ = f.rejection("svc.test")
		assert.Zero(t, p, "16 refusals alone")
		assert.Equal(t, 20, f.attempts["svc.test"])
	})
}

func TestWindowSlides(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(0.95, always(true), throttle.Window(time.Second))
		f.gets("http://svc.test/", 30)
		p, _ := f.rejection("svc.test")
		require.InDelta(t, 0.9, p, 1e-9)

		// Half a window later, still within it.
		time.Sleep(500 * time.Millisecond)
		p, _ = f.rejection("svc.test")
		assert.InDelta(t, 0.9, p, 1e-9, "half a window later")

		// 20 failures more, half a window after the first 30.
		f.gets("http://svc.test/", 20)
		// A window after the first 30, only the last 20 count.
		time.Sleep(500 * time.Millisecond)
		p, _ = f.rejection("svc.test")
		assert.InDelta(t, 0.9, p, 1e-9, "the last 20 failures")

		// A window after the last failures, nothing is refused.
		time.Sleep(500 * time.Millisecond)
		p, _ = f.rejection("svc.test")
		assert.Zero(t, p, "a window after the last failure")
	})
}

func TestWayBackIsOneSuccess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		failing := true
		f := newFixture(0.95, switching(&failing))
		f.gets("http://svc.test/", 1000)
		p, _ := f.rejection("svc.test")
		require.InDelta(t, 0.9, p, 1e-9)
		// One success while refused forgets the 1000 failures.
		failing = false
		f.get("http://svc.test/")
		p, counted := f.rejection("svc.test")
		assert.Zero(t, p)
		assert.True(t, counted)
		req, acc := f.th.Window("http", "svc.test")
		assert.Equal(t, [2]int64{1, 1}, [2]int64{req, acc}, "the window holds only the success")
	})
}

func TestProbesAHostItRefuses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// The probability refuses everything; after 4 refusals in a row,
		// one request is sent a tenth of the window (1 s) after the last
		// one sent.
		failing := true
		f := newFixture(0.95, switching(&failing))
		f.gets("http://svc.test/", 20)
		f.rand = 0
		refusals := func(n int) {
			t.Helper()
			for i := range n {
				require.True(t, f.get("http://svc.test/"), "request %d refused", i)
			}
		}
		refusals(10)
		time.Sleep(999 * time.Millisecond)
		refusals(10) // not quite 1 s since the last request sent
		time.Sleep(time.Millisecond)
		require.False(t, f.get("http://svc.test/"), "a probe, which fails")
		require.Equal(t, 21, f.attempts["svc.test"])
		time.Sleep(time.Second)
		refusals(4) // 1 s passed, but not 4 refusals in a row
		failing = false
		require.False(t, f.get("http://svc.test/"), "a probe, which succeeds")
		p, _ := f.rejection("svc.test")
		assert.Zero(t, p, "a probe's success ends the refusals")
		assert.Equal(t, 22, f.attempts["svc.test"])
	})
}

func TestCalmsAHealthyHost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		failing := true
		f := newFixture(0.95, switching(&failing), throttle.Window(time.Second))
		f.get("http://svc.test/")
		h := f.th.lookup("svc.test")
		calm := func() bool { h.mu.Lock(); defer h.mu.Unlock(); return h.calm }
		require.False(t, calm())
		failing = false
		f.gets("http://svc.test/", checkEvery)
		assert.False(t, calm(), "the failure is still in the window")
		time.Sleep(time.Second)
		f.gets("http://svc.test/", checkEvery)
		assert.True(t, calm(), "a window without failures")
		req, acc := f.th.Window("http", "svc.test")
		assert.Equal(t, [2]int64{0, 0}, [2]int64{req, acc}, "a calm host's window counts nothing")
	})
}

// TestCreditsACalmHost checks that what a host accepted before it first
// fails counts for it, fading: 100 accepts, then 30 failures, are no
// reason to refuse anything; 30 failures alone are, and so are they once
// the credit has faded (5 s).
func TestCreditsACalmHost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		failing := false
		f := newFixture(0.95, switching(&failing))
		f.gets("http://up.test/", 100)
		failing = true
		for range 30 {
			f.get("http://up.test/")
			f.get("http://down.test/")
		}
		p, _ := f.rejection("up.test")
		assert.Zero(t, p, "100 accepts, then 30 failures")
		p, _ = f.rejection("down.test")
		assert.InDelta(t, 0.9, p, 1e-9, "30 failures alone")
		time.Sleep(5 * time.Second)
		p, _ = f.rejection("up.test")
		assert.InDelta(t, 0.9, p, 1e-9, "the credit faded")
	})
}

func TestIsPerHost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(0, func(host string, _ int) bool { return host == "down.test" })
		refused := map[string]int{}
		for range 500 {
			for _, host := range []string{"down.test", "up.test"} {
				if f.get("http://" + host + "/") {
					refused[host]++
				}
			}
		}
		assert.Zero(t, refused["up.test"])
		assert.Equal(t, 500, f.attempts["up.test"])
		// With a random source of 0, every request is refused once the
		// probability is positive: the first 20 fail, then the cap of 0.9
		// is all the random draw sees.
		assert.Equal(t, 480, refused["down.test"])
		p, _ := f.rejection("up.test")
		assert.Zero(t, p, "a host that never failed")
	})
}

// TestChangesAreToldOnce checks the changes a Throttler returns: the
// request whose count starts the refusals of a host finds Started, with
// the probability; the one whose success ends them finds Ended; the
// others find none.
func TestChangesAreToldOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		failing := true
		f := newFixture(0.95, switching(&failing), throttle.MinRequests(4))
		f.gets("http://SVC.test:80/", 10)
		svc := wire.HostKey{Scheme: "http", Host: "svc.test"}
		want := []told{{Started, svc, 4 / 5.0}}
		assert.Equal(t, want, f.changes, "the fourth failure")
		failing = false
		f.gets("http://svc.test/", 10)
		want = append(want, told{Ended, svc, 0})
		assert.Equal(t, want, f.changes, "the first success")
	})
}

// TestWhatIsNotCounted checks what Record and GaveUp leave uncounted: a
// verdict the classifier retries (the request may still be rescued), the
// error of a caller who gave up, a request never sent, and a host without
// counts when its request was admitted.
func TestWhatIsNotCounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(0.95, always(true), throttle.MinRequests(1))
		f.get("http://svc.test/") // one failure: the host has counts
		req, _ := http.NewRequest(http.MethodGet, "http://svc.test/", nil)
		h, _, ok, _ := f.th.Admit(req)
		require.True(t, ok)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		canceled := req.WithContext(ctx)
		errCanceled := errors.New("canceled")

		f.th.Record(h, req, nil, classify.Verdict{Decision: classify.Retry}, 3)
		f.th.Record(h, canceled, errCanceled, classify.Verdict{Decision: classify.DontRetry}, 3)
		f.th.Record(nil, req, nil, classify.Verdict{Decision: classify.DontRetry}, 3)
		f.th.GaveUp(req, 0, false, nil)
		f.th.GaveUp(req, 3, true, nil)
		f.th.GaveUp(canceled, 3, false, errCanceled)
		n, acc := f.th.Window("http", "svc.test")
		assert.Equal(t, [2]int64{1, 0}, [2]int64{n, acc}, "only the first failure")

		f.th.Record(h, req, nil, classify.Verdict{Decision: classify.DontRetry}, 3)
		n, acc = f.th.Window("http", "svc.test")
		assert.Equal(t, [2]int64{3, 3}, [2]int64{n, acc}, "a success forgets the failure, and counts its attempts")
	})
}

// TestReadsItsEnvAtEachUse checks that a Throttler reads the clock and
// the random source its Env gives at each use, so that what they read may
// change after New.
func TestReadsItsEnvAtEachUse(t *testing.T) {
	now := time.Unix(0, 0)
	rnd := 0.999
	th := New([]throttle.Option{throttle.MinRequests(1), throttle.Window(time.Second)},
		Env{Now: func() time.Time { return now }, Rand: func() float64 { return rnd }})
	req, _ := http.NewRequest(http.MethodGet, "http://svc.test/", nil)
	th.GaveUp(req, 1, false, nil)
	_, _, ok, _ := th.Admit(req)
	assert.True(t, ok, "a draw of 0.999")
	rnd = 0
	_, _, ok, _ = th.Admit(req)
	assert.False(t, ok, "a draw of 0")
	now = now.Add(time.Second)
	_, _, ok, _ = th.Admit(req)
	assert.True(t, ok, "a window later")
}

func TestBoundsItsHosts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(0.95, always(true))
		for i := range MaxHosts + 100 {
			f.get("http://h" + strconv.Itoa(i) + ".test/")
			time.Sleep(time.Millisecond)
		}
		tb := f.th.hosts.Load()
		assert.Equal(t, MaxHosts, tb.n)
		// The hosts that failed least recently made room.
		has := func(host string) bool { return f.th.lookup(host) != nil }
		assert.False(t, has("h0.test"))
		assert.False(t, has("h99.test"))
		assert.True(t, has("h100.test"))
		assert.True(t, has("h1123.test"))
		n := 0
		for range f.th.Rejections() {
			n++
		}
		assert.Equal(t, MaxHosts, n)
	})
}

func TestSpellingsOfAHostShareItsCounts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(0.999, always(true))
		for i := range 30 {
			url := "http://svc.test/"
			if i%2 == 1 {
				url = "http://SVC.test:80/"
			}
			f.get(url)
		}
		var got []throttle.Rejection
		for r := range f.th.Rejections() {
			got = append(got, r)
		}
		assert.Equal(t, []throttle.Rejection{{Scheme: "http", Host: "svc.test", Probability: 0.9}}, got)
		assert.Equal(t, 2, f.th.hosts.Load().n, "two spellings")
	})
}
