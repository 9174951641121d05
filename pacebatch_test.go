package retryhttp

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/retryhttp/retryhttp/budget"
	"github.com/retryhttp/retryhttp/pace"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPacingCancelledWaitersGiveTheirTurnsBack: 200 callers waiting for
// their turns at a host paced at 5 a second (a bucket it announces, or
// not) are all cancelled, at once or after a second of turns; the next
// request's turn comes within one interval (200 ms), not after the turns
// they held.
func TestPacingCancelledWaitersGiveTheirTurnsBack(t *testing.T) {
	for _, tt := range []struct {
		name     string
		announce bool
		after    time.Duration
	}{
		{"announced, cancelled at once", true, 0},
		{"announced, cancelled after a second", true, 1100 * time.Millisecond},
		{"learned, cancelled at once", false, 0},
		{"learned, cancelled after a second", false, 1100 * time.Millisecond},
	} {
		t.Run(tt.name, func(t *testing.T) { testCancelledWaiters(t, tt.announce, tt.after) })
	}
}

func testCancelledWaiters(t *testing.T, announce bool, after time.Duration) {
	synctest.Test(t, func(t *testing.T) {
		q := newQuotaServer(5, 1, announce)
		tr := New(WithBase(q), WithPacing(pace.MaxWait(time.Hour)), WithMaxAttempts(1))
		for range 2 { // the bucket spent: the host is paced
			resp, err := tr.RoundTrip(get(t, "http://quota.test/"))
			require.NoError(t, err)
			resp.Body.Close()
		}
		require.Equal(t, 1, tr.PacedHosts())
		ctx, cancel := context.WithCancel(t.Context())
		var wg sync.WaitGroup
		for range 200 {
			wg.Go(func() {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://quota.test/", nil)
				if resp, err := tr.RoundTrip(req); err == nil {
					resp.Body.Close()
				}
			})
		}
		synctest.Wait() // every caller waits for its turn, or was sent
		time.Sleep(after)
		cancel()
		wg.Wait()
		start := time.Now()
		resp, err := tr.RoundTrip(get(t, "http://quota.test/"))
		require.NoError(t, err)
		resp.Body.Close()
		assert.LessOrEqual(t, time.Since(start), 200*time.Millisecond+time.Millisecond, "the next request's turn")
	})
}

// burst sends n keyed POSTs through rt at once, as a batch job fires them,
// and returns how many succeeded, how many failed with a *pace.Error, how
// many ended otherwise (a 429 returned, another error), and when the last
// ended.
func burst(t *testing.T, rt http.RoundTripper, n int) (ok, paced, other int, took time.Duration) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		wg.Go(func() {
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://quota.test/v1/chat", strings.NewReader(`{"n":1}`))
			require.NoError(t, err)
			req.Header.Set("Idempotency-Key", "k-"+strconv.Itoa(i))
			resp, err := rt.RoundTrip(req)
			mu.Lock()
			defer mu.Unlock()
			took = max(took, time.Since(start))
			switch {
			case err == nil && resp.StatusCode == http.StatusOK:
				ok++
			case errors.Is(err, pace.ErrWaitTooLong):
				paced++
			default:
				other++
			}
			if err == nil {
				resp.Body.Close()
			}
		})
	}
	wg.Wait()
	return ok, paced, other, took
}

// TestPacingABurst: 300 keyed POSTs fired at once at a bucket of 20 a
// second (capacity 20) that announces itself as OpenAI does and answers
// 429 with Retry-After: 1. The first wave's 429s are pacing's to order,
// not failures the retry budget pays for: with pace.MaxWait(30s) all 300
// succeed within 16.5 s (15 s is the quota's least); at the default
// MaxWait none ends as a 429, each either succeeds or fails with its
// *pace.Error.
func TestPacingABurst(t *testing.T) {
	t.Run("MaxWait 30s", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			tr := New(WithBase(newQuotaServer(20, 20, true)), WithPacing(pace.MaxWait(30*time.Second)))
			ok, paced, other, took := burst(t, tr, 300)
			assert.Equal(t, 300, ok, "succeeded (%d paced out, %d otherwise)", paced, other)
			assert.LessOrEqual(t, took, 16500*time.Millisecond)
			t.Logf("300 at once, MaxWait 30s: %d succeeded in %v", ok, took)
		})
	})
	t.Run("default MaxWait", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			tr := New(WithBase(newQuotaServer(20, 20, true)), WithPacing())
			ok, paced, other, took := burst(t, tr, 300)
			t.Logf("300 at once, MaxWait 10s: %d succeeded, %d paced out, in %v", ok, paced, took)
			assert.Zero(t, other, "ended as a 429 or another error (%d succeeded, %d paced out)", ok, paced)
			assert.Equal(t, 300, ok+paced)
		})
	})
}

// TestPacingALongRetryAfterHoldsItsWholeLength: after a 429 with
// Retry-After: 45, a request a second reaches the server not before 45 s:
// the host stays paced for the whole hold, not 30 s after the 429, and a
// refused request renews nothing it needs.
func TestPacingALongRetryAfterHoldsItsWholeLength(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &script{steps: []step{{status: 429, header: http.Header{"Retry-After": {"45"}}}, {status: 200}}}
		tr := New(WithBase(s), WithPacing(), WithMaxAttempts(1))
		start := time.Now()
		resp, err := tr.RoundTrip(get(t, "http://svc.test/"))
		require.NoError(t, err)
		resp.Body.Close()
		var wg sync.WaitGroup
		for range 50 {
			time.Sleep(time.Second)
			wg.Go(func() {
				if resp, err := tr.RoundTrip(get(t, "http://svc.test/")); err == nil {
					resp.Body.Close()
				}
			})
		}
		wg.Wait()
		require.Greater(t, s.count(), 1, "requests sent once the hold ended")
		s.mu.Lock()
		defer s.mu.Unlock()
		assert.GreaterOrEqual(t, s.times[1].Sub(start), 45*time.Second, "the first request after the 429")
	})
}

// TestPacingADeclaredQuotaPacesFromTheFirstRequest: with pace.Quota, a
// burst of 300 at a bucket of 20 a second (capacity 20) is paced from its
// first request: at most 1% of what reaches the server is a 429, and all
// 300 succeed within 16.5 s with pace.MaxWait(30s). Another host is not
// paced.
func TestPacingADeclaredQuotaPacesFromTheFirstRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQuotaServer(20, 20, true)
		tr := New(WithBase(q), WithPacing(pace.MaxWait(30*time.Second), pace.Quota("quota.test", 20, time.Second)))
		ok, _, _, took := burst(t, tr, 300)
		assert.Equal(t, 300, ok)
		assert.LessOrEqual(t, took, 16500*time.Millisecond)
		q.mu.Lock()
		admitted, refused := len(q.admitted), len(q.refused)
		q.mu.Unlock()
		assert.LessOrEqual(t, float64(refused), 0.01*float64(admitted+refused), "429s of %d", admitted+refused)
		t.Logf("300 at once, quota declared: %d 429s of %d sent, all done in %v", refused, admitted+refused, took)

		other := &script{steps: []step{{status: 200}}}
		tr = New(WithBase(other), WithPacing(pace.Quota("quota.test", 1, time.Hour)))
		for range 10 {
			resp, err := tr.RoundTrip(get(t, "http://other.test/"))
			require.NoError(t, err)
			resp.Body.Close()
		}
		assert.Equal(t, 10, other.count(), "a host without a quota declared waits for nothing")
	})
}

// TestPacingThrottleRetriesLeaveTheBudgetToFailures: a throttle's retry
// at a paced host is paid by its turn, so that a budget of one retry is
// still there for the 500 that follows; without pacing, the 429's retry
// spends it. The budget still bounds the retries of what pacing does not
// explain: the second 500 is not retried.
func TestPacingThrottleRetriesLeaveTheBudgetToFailures(t *testing.T) {
	for _, tt := range []struct {
		name   string
		opts   []Option
		sent   int
		status int
	}{
		{"paced", []Option{WithPacing()}, 3, 500},
		{"not paced", nil, 2, 500},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := &script{steps: []step{{status: 429}, {status: 500}, {status: 500}, {status: 200}}}
				opts := append([]Option{WithBase(s), WithMaxAttempts(4),
					WithBudget(budget.NewBucket(budget.Capacity(5), budget.RetryCost(5), budget.TimeoutCost(5)))}, tt.opts...)
				resp, err := New(opts...).RoundTrip(get(t, "http://svc.test/"))
				require.NoError(t, err)
				resp.Body.Close()
				assert.Equal(t, tt.status, resp.StatusCode)
				assert.Equal(t, tt.sent, s.count(), "sent")
			})
		})
	}
}

// TestPacingDisbelievesAResetCenturiesAway: a server that accepts 50 a
// second but says on every answer that 2 requests are left until a reset
// centuries away (year 2286, a century, 31 years) is sent at least 40 a
// second within 2 s; believed, the announcement let 2 of 200 through.
func TestPacingDisbelievesAResetCenturiesAway(t *testing.T) {
	for _, tt := range []struct {
		name string
		h    http.Header
	}{
		{"GitHub", http.Header{"X-Ratelimit-Remaining": {"2"}, "X-Ratelimit-Limit": {"50"}, "X-Ratelimit-Reset": {"9999999999"}}},
		{"OpenAI", http.Header{"X-Ratelimit-Remaining-Requests": {"2"}, "X-Ratelimit-Limit-Requests": {"50"}, "X-Ratelimit-Reset-Requests": {"876000h0m0s"}}},
		{"IETF", http.Header{"Ratelimit": {`"default";r=2;t=999999999`}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := newQuotaServer(50, 10, false)
				srv.extra = tt.h
				tr := New(WithBase(srv), WithPacing(), WithoutBudget(), WithMaxAttempts(3))
				openLoop(t, tr, 200, 5*time.Second)
				srv.mu.Lock()
				from2s := count(srv.admitted, 2*time.Second, 5*time.Second)
				srv.mu.Unlock()
				t.Logf("%s: %.1f admitted a second from 2 s on", tt.name, float64(from2s)/3)
				assert.GreaterOrEqual(t, float64(from2s)/3, 40.0, "admitted a second from 2 s on")
			})
		})
	}
}
