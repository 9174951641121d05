package scenario

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp/bench/peers"
)

var fast = peers.Config{Attempts: 3, Base: time.Millisecond, Cap: 10 * time.Millisecond}

func lib(t *testing.T, name string) peers.Library {
	t.Helper()
	l, ok := peers.ByName(name)
	require.True(t, ok, name)
	return l
}

func TestPlainOutageAmplificationIsExactlyOne(t *testing.T) {
	r := RunOutage(context.Background(), lib(t, peers.Plain), peers.NewBase(), fast, 300, 8)
	assert.Equal(t, int64(300), r.ServerCalls)
	assert.Equal(t, "1.00", r.Amplification)
	assert.GreaterOrEqual(t, r.ServerConns, int64(1))
	assert.LessOrEqual(t, r.ServerConns, int64(300))
}

func TestNaiveOutageTriplesTheLoad(t *testing.T) {
	r := RunOutage(context.Background(), lib(t, peers.Naive), peers.NewBase(), fast, 50, 4)
	assert.Equal(t, int64(150), r.ServerCalls)
	assert.Equal(t, "3.00", r.Amplification)
}

func TestServerCountsAttemptsPerRequest(t *testing.T) {
	srv := NewServer(FailFirst(2, http.StatusServiceUnavailable))
	c := client(lib(t, peers.Naive), peers.NewBase(), fast)
	out := Drive(context.Background(), 20, 4, func(ctx context.Context, i int) Outcome {
		return Send(ctx, c, http.MethodGet, srv.URL+"/x", id("s", i), "", nil, false)
	})
	c.CloseIdleConnections()
	srv.Close()

	assert.Equal(t, 20, Summarise(out).OK)
	assert.Equal(t, int64(60), srv.Requests())
	arrivals := srv.Arrivals()
	require.Len(t, arrivals, 20)
	for id, ts := range arrivals {
		assert.Len(t, ts, 3, id)
		for k := 1; k < len(ts); k++ {
			assert.False(t, ts[k].Before(ts[k-1]), "arrivals of %s out of order", id)
		}
	}
	assert.GreaterOrEqual(t, srv.Conns(), int64(1))
	assert.LessOrEqual(t, srv.Conns(), srv.Requests())
}

func TestDriveRunsEveryIndexOnce(t *testing.T) {
	seen := make([]int, 100)
	out := Drive(context.Background(), 100, 7, func(_ context.Context, i int) Outcome {
		seen[i]++
		return Outcome{OK: i%2 == 0, Latency: time.Duration(i) * time.Millisecond}
	})
	for i, n := range seen {
		assert.Equal(t, 1, n, "index %d", i)
	}
	s := Summarise(out)
	assert.Equal(t, Stats{N: 100, OK: 50, P50: 49 * time.Millisecond, P99: 98 * time.Millisecond}, s)
	assert.Equal(t, "50.00%", s.SuccessRate())
}

func TestFailRandomlyIsSeededAndNearItsRate(t *testing.T) {
	fails := 0
	for i := range 20000 {
		if unitHash(1, id("t", i), 1) < 0.1 {
			fails++
		}
	}
	assert.InDelta(t, 2000, fails, 200)
	assert.Equal(t, unitHash(7, "t3", 2), unitHash(7, "t3", 2))
	assert.NotEqual(t, unitHash(7, "t3", 2), unitHash(8, "t3", 2))
}

func TestResetFirstResetsOnlyTheFirstAttempt(t *testing.T) {
	srv := NewServer(ResetFirst)
	defer srv.Close()
	c := &http.Client{Transport: peers.NewBase()}
	defer c.CloseIdleConnections()
	first := Send(context.Background(), c, http.MethodPost, srv.URL, "a", "", newPostBody, true)
	require.Error(t, first.Err)
	second := Send(context.Background(), c, http.MethodPost, srv.URL, "a", "", newPostBody, true)
	require.NoError(t, second.Err)
	assert.True(t, second.OK)
	assert.Len(t, srv.Arrivals()["a"], 2)
}

func TestHerdWithoutRetriesHasNoPeak(t *testing.T) {
	r := RunHerd(context.Background(), lib(t, peers.Plain), fast, 20)
	assert.Zero(t, r.Retries)
	assert.Zero(t, r.Peak)
	assert.Zero(t, r.Stats.OK)
}

func TestHerdCountsEveryRetry(t *testing.T) {
	r := RunHerd(context.Background(), lib(t, peers.Naive), fast, 20)
	assert.Equal(t, 40, r.Retries)
	assert.Equal(t, 20, r.Stats.OK)
	total := 0
	for _, n := range r.Buckets {
		total += n
	}
	assert.Equal(t, 60, total)
}

func TestChainMultipliesNaiveRetries(t *testing.T) {
	r := RunChain(context.Background(), lib(t, peers.Naive), fast, 1, 2, 2)
	assert.Equal(t, "27.00", r.FirstPerRequest)
	assert.Equal(t, "27.00", r.AllPerRequest)
	assert.Zero(t, r.Stats.OK)
}

func TestMemoryChildReports(t *testing.T) {
	srv := NewServer(func(w http.ResponseWriter, r *http.Request, attempt int) {
		n, _ := bytes.NewBuffer(nil).ReadFrom(r.Body)
		if n != 1<<20 {
			http.Error(w, fmt.Sprint("got ", n, " bytes"), http.StatusBadRequest)
			return
		}
		OK(w, r, attempt)
	})
	defer srv.Close()
	var out strings.Builder
	require.NoError(t, MemoryChild(&out, peers.RetryHTTP, srv.URL, 1<<20, fast))
	rss, status, err := parseMemoryLine(out.String())
	require.NoError(t, err)
	assert.Equal(t, "200", status)
	assert.Positive(t, rss)
}

func TestTableFormatsMarkdown(t *testing.T) {
	tb := Table{Title: "t", Note: "n", Header: []string{"a", "b"}}
	tb.Add("1", "2")
	var out strings.Builder
	tb.Fprint(&out)
	assert.Equal(t, "### t\n\nn\n\n| a | b |\n| --- | --- |\n| 1 | 2 |\n\n", out.String())
}

func TestThrottlingOutageSendsAtMostThreeTenths(t *testing.T) {
	// The target: at most 0.30 server requests per client request in an
	// outage, over no more connections than the retries close and replace:
	// one per caller, one per retry, and as many again for the dials
	// net/http finishes after their caller took a freed connection.
	fail := Fail(http.StatusServiceUnavailable)
	without := RunThrottle(context.Background(), lib(t, peers.RetryHTTP), fast, fail, 2000, 16, "w")
	with := RunThrottle(context.Background(), throttler(t, peers.RetryHTTPThrottling), fast, fail, 2000, 16, "t")
	assert.GreaterOrEqual(t, without.ServerCalls, int64(2000))
	assert.LessOrEqual(t, with.ServerCalls, int64(600))
	retries := with.ServerCalls - int64(2000-with.Refused)
	assert.LessOrEqual(t, with.ServerConns, 2*16+retries)
	assert.Equal(t, int64(2000-with.Refused), int64(with.Stats.N-with.Refused))
	assert.Positive(t, with.Refused)
}

func TestThrottlingShedsNothingAtTenPercentFailures(t *testing.T) {
	r := RunThrottle(context.Background(), throttler(t, peers.RetryHTTPThrottling), fast, FailRandomly(1, 0.1), 2000, 16, "t")
	assert.Zero(t, r.Refused)
	assert.GreaterOrEqual(t, r.Stats.OK, 1998)
}

// TestThrottlingRecoveryCountsSuccessesAfterHealing checks that 100
// successes are counted after the server heals, and that the throttler
// recovers in requests, which the machine's speed does not change: it
// refuses until 5 requests in a row succeed (at 90% refused, about 45
// refusals), then forgets the outage, where refusing against the outage's
// failures until its window passed would refuse most of the 400 requests
// started after healing.
func TestThrottlingRecoveryCountsSuccessesAfterHealing(t *testing.T) {
	// Whether any request is refused after healing depends on a race: a
	// retry of a request started during the outage may succeed the moment
	// the host heals, which ends the refusals before a request started
	// after healing asks (1 run in 40 here). What holds is the bound.
	r := RunRecovery(context.Background(), throttler(t, peers.RetryHTTPThrottling), fast, 1000, 200*time.Millisecond, 400*time.Millisecond)
	assert.Positive(t, r.ToSuccesses)
	assert.Less(t, r.RefusedAfter, 200, "requests refused after healing")
}

func TestThrottlingRefusesNoRescuedRequest(t *testing.T) {
	// Every request ends in success after a retry: none is refused.
	fresh := peers.NewBase()
	fresh.DisableKeepAlives = true
	for _, tc := range []struct {
		name    string
		base    *http.Transport
		b       Behaviour
		keyed   bool
		n, conc int
	}{
		{"reset GET", fresh, ResetFirst, false, 400, 16},
		{"keyed POST 503, 503, 200", peers.NewBase(), FailFirst(2, http.StatusServiceUnavailable), true, 64, 16},
		{"429 Retry-After: 1", peers.NewBase(), ThrottleFirst("1"), false, 64, 64},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := RunRescued(context.Background(), throttler(t, peers.RetryHTTPThrottling), tc.base, fast, tc.b, tc.keyed, tc.n, tc.conc, "s")
			assert.Zero(t, r.Refused)
			assert.Equal(t, tc.n, r.Stats.OK)
		})
	}
}

func TestThrottlersRefuseDuringAnOutage(t *testing.T) {
	for _, l := range peers.Throttlers()[1:] {
		t.Run(l.Name, func(t *testing.T) {
			r := RunThrottle(context.Background(), l, fast, Fail(http.StatusServiceUnavailable), 300, 4, "r")
			assert.Positive(t, r.Refused)
			assert.Less(t, r.ServerCalls, int64(300))
		})
	}
}

func throttler(t *testing.T, name string) peers.Library {
	t.Helper()
	for _, l := range peers.Throttlers() {
		if l.Name == name {
			return l
		}
	}
	t.Fatalf("no throttler %q", name)
	return peers.Library{}
}

// TestThroughputReadsEveryDownload runs the throughput scenario small: each
// download through each library must read the whole body (a failed one
// would show a rate of 0).
func TestThroughputReadsEveryDownload(t *testing.T) {
	p := QuickParams()
	p.Download, p.DownloadRuns = 4<<20, 2
	tables := Throughput(context.Background(), p)
	require.Len(t, tables, 1)
	require.Len(t, tables[0].Rows, 4)
	for _, row := range tables[0].Rows {
		slowest, _, ok := strings.Cut(row[3], " – ")
		require.True(t, ok, row[3])
		rate, err := strconv.ParseFloat(slowest, 64)
		require.NoError(t, err)
		assert.Positive(t, rate, "%s from %s: the slowest download", row[1], row[0])
	}
}
