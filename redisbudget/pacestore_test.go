package redisbudget

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/pace"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// byKey returns the fleet's reports by key.
func byKey(rs []pace.Report) map[string]pace.Report {
	m := map[string]pace.Report{}
	for _, r := range rs {
		m[r.Key] = r
	}
	return m
}

// TestPaceStoreMergesTheFleet: two members' reports of a host come back
// as the fleet's: demands summed, the latest cut and hold, the least
// quota, two members; a host only one reports, with one; a member's new
// report replaces its last; a report whose lease ended is forgotten.
func TestPaceStoreMergesTheFleet(t *testing.T) {
	c := newClient(t, startRedis(t))
	s := NewPaceStore(c, "fleet")
	ctx := t.Context()
	now := time.Now()
	_, err := s.Exchange(ctx, "a", time.Minute, []pace.Report{
		{Key: "https://api.test", Demand: 10, Cut: now.Add(-3 * time.Second), Quota: 50},
		{Key: "https://api.test#1f", Demand: 1},
	})
	require.NoError(t, err)
	fleet, err := s.Exchange(ctx, "b", time.Minute, []pace.Report{
		{Key: "https://api.test", Demand: 30, Cut: now.Add(-time.Second), Hold: now.Add(20 * time.Second), Quota: 40},
	})
	require.NoError(t, err)
	m := byKey(fleet)
	require.Len(t, m, 2)
	api := m["https://api.test"]
	assert.Equal(t, 40.0, api.Demand)
	assert.Equal(t, 40.0, api.Quota, "the least quota")
	assert.Equal(t, 2, api.Members)
	assert.WithinDuration(t, now.Add(-time.Second), api.Cut, 100*time.Millisecond, "the latest cut")
	assert.WithinDuration(t, now.Add(20*time.Second), api.Hold, 100*time.Millisecond, "the hold")
	assert.Equal(t, 1, m["https://api.test#1f"].Members)
	assert.True(t, m["https://api.test#1f"].Cut.IsZero(), "no cut")
	assert.True(t, m["https://api.test#1f"].Hold.IsZero(), "no hold")

	fleet, err = s.Exchange(ctx, "a", time.Millisecond, []pace.Report{{Key: "https://api.test", Demand: 5}})
	require.NoError(t, err)
	assert.Equal(t, 35.0, byKey(fleet)["https://api.test"].Demand, "a's report replaced")

	// a's reports now have a lease of a millisecond: b's exchanges see
	// them go.
	require.Eventually(t, func() bool {
		fleet, err := s.Exchange(ctx, "b", time.Minute, nil)
		return err == nil && byKey(fleet)["https://api.test"].Members == 1
	}, 5*time.Second, time.Millisecond, "a's report forgotten when its lease ended")
	assert.True(t, s.Status().Shared)
}

// TestPaceStoreRefusesWhatDoesNotTravel: a report that would not read as
// one line of the script's batch is refused before anything is sent.
func TestPaceStoreRefusesWhatDoesNotTravel(t *testing.T) {
	c := newClient(t, startRedis(t))
	s := NewPaceStore(c, "refuse")
	for _, tt := range []struct {
		name   string
		member string
		lease  time.Duration
		r      pace.Report
	}{
		{"empty member", "", time.Second, pace.Report{Key: "https://a"}},
		{"member with a space", "a b", time.Second, pace.Report{Key: "https://a"}},
		{"no lease", "a", 0, pace.Report{Key: "https://a"}},
		{"empty key", "a", time.Second, pace.Report{}},
		{"key with a newline", "a", time.Second, pace.Report{Key: "https://a\nx"}},
		{"long key", "a", time.Second, pace.Report{Key: strings.Repeat("k", 513)}},
		{"NaN demand", "a", time.Second, pace.Report{Key: "https://a", Demand: math.NaN()}},
		{"negative quota", "a", time.Second, pace.Report{Key: "https://a", Quota: -1}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.Exchange(t.Context(), tt.member, tt.lease, []pace.Report{tt.r})
			assert.Error(t, err)
		})
	}
	assert.True(t, s.Status().Shared, "a refused call says nothing of Redis")
}

// TestPaceStoreFailsFastWhenRedisIsGone: with Redis killed, an exchange
// fails within the timeout, and the status says so.
func TestPaceStoreFailsFastWhenRedisIsGone(t *testing.T) {
	srv := startRedis(t)
	c := newClient(t, srv)
	s := NewPaceStore(c, "gone", WithTimeout(50*time.Millisecond))
	_, err := s.Exchange(t.Context(), "a", time.Second, []pace.Report{{Key: "https://a", Demand: 1}})
	require.NoError(t, err)
	srv.Close()
	start := time.Now()
	_, err = s.Exchange(t.Context(), "a", time.Second, []pace.Report{{Key: "https://a", Demand: 1}})
	assert.Error(t, err)
	assert.Less(t, time.Since(start), time.Second)
	assert.False(t, s.Status().Shared)
}

// parseFleetTests is shared by TestParseFleet and the seed corpus of
// FuzzParseFleet.
var parseFleetTests = []struct {
	in string
	n  int
	ok bool
}{
	{"", 0, true},
	{"10 1000 0 50 2 https://a\n", 1, true},
	{"10 -1 0 0 1 https://a\n2.5 0 30000 0 3 https://b#1f\n", 2, true},
	{"10 -1 0 0 0 https://a\n", 0, false},                   // no member
	{"10 -2 0 0 1 https://a\n", 0, false},                   // a cut that is not one
	{"nan -1 0 0 1 https://a\n", 0, false},                  // a demand that is no number
	{"1e400 -1 0 0 1 https://a\n", 0, false},                // nor one that is infinite
	{"1 -1 0 0 1 https://a extra\n", 0, false},              // a field too many
	{"1 -1 99999999999999999999 0 1 https://a\n", 0, false}, // a hold beyond any
}

func TestParseFleet(t *testing.T) {
	for _, tt := range parseFleetTests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseFleet(tt.in, time.Now(), 16)
			if !tt.ok {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Len(t, got, tt.n)
		})
	}
	_, err := parseFleet(strings.Repeat("1 -1 0 0 1 https://a\n", 3), time.Now(), 2)
	assert.Error(t, err, "more lines than the most kept")
}

// FuzzParseFleet checks that no reply panics the reader, and that what it
// reads is what a Store may return.
func FuzzParseFleet(f *testing.F) {
	for _, tt := range parseFleetTests {
		f.Add(tt.in)
	}
	now := time.Now()
	f.Fuzz(func(t *testing.T, reply string) {
		got, err := parseFleet(reply, now, 64)
		if err != nil {
			return
		}
		for _, r := range got {
			if r.Members < 1 || !(r.Demand >= 0) || math.IsInf(r.Demand, 0) || !(r.Quota >= 0) || math.IsInf(r.Quota, 0) || r.Key == "" {
				t.Fatalf("parseFleet(%q) read %+v", reply, r)
			}
		}
	})
}

// TestPaceStoreFleetOfTransports: four Transports, each with a PaceStore
// of its own on one name, as four processes would have, each offered 80
// requests a second for 6 s on a loopback server with a quota of 50 a
// second (burst 10) that announces itself as OpenAI does: at most 2% of
// what reaches the server after the first 2 s is a 429, against what
// four Transports pacing apart send.
func TestPaceStoreFleetOfTransports(t *testing.T) {
	c := newClient(t, startRedis(t))
	var mu sync.Mutex
	tokens, last := 10.0, time.Now()
	start := last
	var admitted, refused int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		now := time.Now()
		tokens = min(10, tokens+now.Sub(last).Seconds()*50)
		last = now
		ok := tokens >= 1
		if ok {
			tokens--
		}
		counted := now.Sub(start) >= 2*time.Second
		switch {
		case counted && ok:
			admitted++
		case counted:
			refused++
		}
		left := int(tokens)
		full := time.Duration(math.Ceil((10-tokens)/50*1000)) * time.Millisecond
		mu.Unlock()
		w.Header().Set("X-Ratelimit-Limit-Requests", "10")
		w.Header().Set("X-Ratelimit-Remaining-Requests", strconv.Itoa(left))
		w.Header().Set("X-Ratelimit-Reset-Requests", full.String())
		if !ok {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
		}
	}))
	defer srv.Close()

	var wg sync.WaitGroup
	for range 4 {
		tr := retryhttp.New(retryhttp.WithPacing(pace.Shared(NewPaceStore(c, "quota"))), retryhttp.WithoutBudget())
		defer tr.CloseIdleConnections()
		wg.Go(func() {
			var calls sync.WaitGroup
			tick := time.NewTicker(time.Second / 80)
			defer tick.Stop()
			for end := time.Now().Add(6 * time.Second); time.Now().Before(end); <-tick.C {
				calls.Go(func() {
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					defer cancel()
					req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
					if resp, err := tr.RoundTrip(req); err == nil {
						resp.Body.Close()
					}
				})
			}
			calls.Wait()
		})
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	share := float64(refused) / float64(admitted+refused)
	t.Logf("after 2 s: %d admitted, %d refused (%.2f%%)", admitted, refused, 100*share)
	assert.LessOrEqual(t, share, 0.02)
}
