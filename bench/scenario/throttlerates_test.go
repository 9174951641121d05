package scenario

import (
	"bytes"
	"flag"
	"fmt"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp/bench/peers"
)

var full = flag.Bool("full", false, "run the throttling tables in full: every rate, 10 trials each")

// logTable logs tb as markdown.
func logTable(t *testing.T, tb Table) {
	var b bytes.Buffer
	tb.Fprint(&b)
	t.Log("\n" + b.String())
}

// TestThrottleRates measures, for each library of the rate tables, a 30 s
// outage and its healing at each rate, one process sending; with -full at
// every rate of the table, 10 trials each (about 45 s; 2.5 minutes under
// -race), otherwise at 2, 20 and 200 a second, 3 trials each. retryhttp
// with throttling comes back within 1 s of healing, or 5 requests where
// these take longer, in 9 trials of 10 at least (every trial of 3), and
// from 20 a second on, at most 0.30 requests reach the host per request
// during the outage (the median). Without throttling, none is refused.
func TestThrottleRates(t *testing.T) {
	rates, trials := []float64{2, 20, 200}, 3
	if *full {
		rates, trials = []float64{1, 2, 2.5, 5, 10, 20, 200, 2000}, 10
	}
	libs := RateLibraries()
	tb, got := ThrottleRates(t, libs, rates, trials)
	logTable(t, tb)
	for j, rate := range rates {
		ts := got[0][j] // retryhttp + throttling
		assert.GreaterOrEqual(t, ts.Within(RecoveryBound(rate)), trials-trials/10, "%v/s: trials back within %v", rate, RecoveryBound(rate))
		if rate >= 20 {
			assert.LessOrEqual(t, ts.Amplifications()[trials/2], 0.30, "%v/s: outage amplification", rate)
		}
		assert.Equal(t, trials, got[1][j].Within(0), "%v/s: retryhttp without throttling refuses nothing", rate)
		for i := range libs {
			assert.Zero(t, got[i][j].Errs(), "%v/s, %s: errors other than refusals", rate, libs[i].Name)
		}
	}
}

// TestThrottleFlapping has a host flap, 2 s up and 2 s down, at 20 requests
// a second: with throttling, at least 97% of the requests sent while it is
// up succeed (10 trials with -full, 3 otherwise; about 99.5% do, and of 100
// runs of 3 unseeded trials the lowest was 98.7%).
func TestThrottleFlapping(t *testing.T) {
	trials := 3
	if *full {
		trials = 10
	}
	tb, got := ThrottleFlapping(t, RateLibraries(), trials)
	logTable(t, tb)
	sent, ok := 0, 0
	for _, r := range got[0] {
		sent, ok = sent+r.UpSent, ok+r.UpOK
	}
	assert.GreaterOrEqual(t, float64(ok), 0.97*float64(sent), "retryhttp + throttling: succeeded while up")
}

// TestThrottleFleet has 20 processes send 1 request a second each to a
// host that fails for 30 s, sharing nothing, sharing through memory,
// through a real redis-server, and through one killed halfway through the
// outage; failsafe-go's throttler, which cannot share, beside them. Alone,
// the processes do not shed the outage. Shared through memory or Redis,
// they shed it as one process sending 20 a second would, and, probing in
// turn, come back as it does: each within 5 of its requests in 9 trials of
// 10 (every trial of 3), and the fleet within 1 s in two thirds of the
// trials at least (10 of 10 as a rule; the trials are not seeded). With
// Redis killed, each comes back within 5 of its requests, and no request
// fails for it. 10 trials with -full, 3 otherwise.
func TestThrottleFleet(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatal("redis-server is not on the PATH: install it (the CI does)")
	}
	trials := 3
	if *full {
		trials = 10
	}
	redis, err := StartRedis(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(redis.Kill)
	dir := t.TempDir()
	apart := func(lib peers.Library) func(int) (Clients, func()) {
		return func(int) (Clients, func()) { return Apart(lib, RateConfig), nil }
	}
	rows := []FleetRow{
		{"retryhttp, no throttling", apart(RateLibraries()[1])},
		{"retryhttp + throttling, sharing nothing", apart(RateLibraries()[0])},
		{"retryhttp + throttling, sharing in memory", func(int) (Clients, func()) { return SharedMemory(RateConfig), nil }},
		{"retryhttp + throttling, sharing through Redis", func(trial int) (Clients, func()) {
			return SharedRedis(redis.Addr, fmt.Sprint("fleet-", trial), RateConfig), nil
		}},
		{"retryhttp + throttling, through Redis killed halfway", func(trial int) (Clients, func()) {
			r, err := StartRedis(dir)
			require.NoError(t, err)
			t.Cleanup(r.Kill)
			return SharedRedis(r.Addr, fmt.Sprint("killed-", trial), RateConfig), r.Kill
		}},
		{"failsafe-go + adaptivethrottler, 20 apart", apart(RateLibraries()[2])},
	}
	start := time.Now()
	tb, got := ThrottleFleet(t, rows, trials)
	logTable(t, tb)
	t.Logf("%d trials of %d rows in %v", trials, len(rows), time.Since(start).Round(time.Millisecond))
	enough := trials - trials/10
	median := func(ts Trials) float64 { return ts.Amplifications()[trials/2] }
	assert.Greater(t, median(got[1]), 1.0, "alone, each process sends too few requests to learn")
	for _, i := range []int{2, 3} {
		assert.LessOrEqual(t, median(got[i]), 0.30, "%s: outage amplification", rows[i].Name)
		assert.GreaterOrEqual(t, got[i].Within(5*time.Second), enough, "%s: trials back within 5 s", rows[i].Name)
		assert.GreaterOrEqual(t, got[i].Within(time.Second), (2*trials+2)/3, "%s: trials back within 1 s", rows[i].Name)
	}
	assert.LessOrEqual(t, median(got[4]), 0.40, "Redis killed: outage amplification")
	assert.GreaterOrEqual(t, got[4].Within(5*time.Second), enough, "Redis killed: trials back within 5 s")
	for i, ts := range got {
		assert.Zero(t, ts.Errs(), "%s: errors other than refusals", rows[i].Name)
	}
}
