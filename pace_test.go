package retryhttp

import (
	"bytes"
	"context"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp/backoff"
	"github.com/retryhttp/retryhttp/hedge"
	"github.com/retryhttp/retryhttp/pace"
)

// quotaServer is an in-memory server with a token-bucket quota of rate a
// second (rise a second from riseAt on, when set) and burst: a request
// beyond it gets a 429 with Retry-After: 1, and every answer announces the
// bucket when announce is set. A round trip takes 1 ms. It records when it
// admitted and refused each request.
type quotaServer struct {
	mu       sync.Mutex
	rate     float64
	rise     float64
	riseAt   time.Duration
	burst    float64
	tokens   float64
	last     time.Time
	start    time.Time
	announce bool
	// anthropic announces the bucket as Anthropic does, its reset an RFC
	// 3339 time in milliseconds beside a Date in whole seconds.
	anthropic bool
	// extra is set on every answer, whatever the bucket holds.
	extra    http.Header
	admitted []time.Duration // since start
	refused  []time.Duration
}

func newQuotaServer(rate, burst float64, announce bool) *quotaServer {
	now := time.Now()
	return &quotaServer{rate: rate, burst: burst, tokens: burst, last: now, start: now, announce: announce}
}

func (q *quotaServer) RoundTrip(r *http.Request) (*http.Response, error) {
	time.Sleep(500 * time.Microsecond) // half a loopback round trip, virtual
	defer time.Sleep(500 * time.Microsecond)
	q.mu.Lock()
	defer q.mu.Unlock()
	now := time.Now()
	at := now.Sub(q.start)
	rate := q.rate
	if q.rise > 0 && at >= q.riseAt {
		rate = q.rise
	}
	q.tokens = min(q.burst, q.tokens+now.Sub(q.last).Seconds()*rate)
	q.last = now
	h := http.Header{}
	status := http.StatusOK
	if q.tokens >= 1 {
		q.tokens--
		q.admitted = append(q.admitted, at)
	} else {
		status = http.StatusTooManyRequests
		h.Set("Retry-After", "1")
		q.refused = append(q.refused, at)
	}
	if q.announce && q.anthropic {
		full := time.Duration(math.Ceil((q.burst-q.tokens)/rate*1000)) * time.Millisecond
		h.Set("Date", now.UTC().Format(http.TimeFormat))
		h.Set("Anthropic-Ratelimit-Requests-Limit", strconv.Itoa(int(q.burst)))
		h.Set("Anthropic-Ratelimit-Requests-Remaining", strconv.Itoa(int(q.tokens)))
		h.Set("Anthropic-Ratelimit-Requests-Reset", now.Add(full).UTC().Format("2006-01-02T15:04:05.000Z07:00"))
	} else if q.announce {
		// As OpenAI announces a bucket: its size, the whole requests it
		// holds, and the time until it is full again.
		full := time.Duration(math.Ceil((q.burst-q.tokens)/rate*1000)) * time.Millisecond
		h.Set("X-Ratelimit-Limit-Requests", strconv.Itoa(int(q.burst)))
		h.Set("X-Ratelimit-Remaining-Requests", strconv.Itoa(int(q.tokens)))
		h.Set("X-Ratelimit-Reset-Requests", full.String())
	}
	for k, v := range q.extra {
		h[k] = v
	}
	return &http.Response{StatusCode: status, Header: h, Body: http.NoBody, Request: r}, nil
}

// count returns how many of times fall in [from, to).
func count(times []time.Duration, from, to time.Duration) int {
	n := 0
	for _, at := range times {
		if at >= from && at < to {
			n++
		}
	}
	return n
}

// figures returns what the server admitted and refused from the first
// second on, and the rate it admitted at, until its last request.
func (q *quotaServer) figures() (admitted, refused int, throughput float64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	end := q.last.Sub(q.start) + time.Nanosecond
	admitted, refused = count(q.admitted, time.Second, end), count(q.refused, time.Second, end)
	return admitted, refused, float64(admitted) / (end - time.Second).Seconds()
}

// recovery returns how long after the rise the server first admitted want
// requests in a second, and -1 if it never did.
func (q *quotaServer) recovery(want int) time.Duration {
	q.mu.Lock()
	defer q.mu.Unlock()
	for at := q.riseAt; at < q.riseAt+10*time.Second; at += 10 * time.Millisecond {
		if count(q.admitted, at, at+time.Second) >= want {
			return at + time.Second - q.riseAt
		}
	}
	return -1
}

// openLoop sends perSecond requests a second through rt for d, each on its
// own goroutine, as an open-loop client does, and waits for them all.
func openLoop(t *testing.T, rt http.RoundTripper, perSecond int, d time.Duration) (ok, failed int) {
	var wg sync.WaitGroup
	var okN, failedN atomic.Int64
	tick := time.NewTicker(time.Second / time.Duration(perSecond))
	defer tick.Stop()
	for end := time.Now().Add(d); time.Now().Before(end); <-tick.C {
		wg.Go(func() {
			resp, err := rt.RoundTrip(get(t, "http://quota.test/"))
			if err == nil && resp.StatusCode == http.StatusOK {
				okN.Add(1)
			} else {
				failedN.Add(1)
			}
			if err == nil {
				resp.Body.Close()
			}
		})
	}
	wg.Wait()
	return int(okN.Load()), int(failedN.Load())
}

// TestPacingSendsAtTheQuota: an open-loop client sending 4 times a
// quota of 50 a second (burst 10) for 10 s, retrying each request up to 3
// attempts, sees at most 1% of 429s after the first second without quota
// headers and none with them, and the server admits at least 95% of its
// quota.
func TestPacingSendsAtTheQuota(t *testing.T) {
	for _, form := range []string{"none", "OpenAI", "Anthropic"} {
		announce := form != "none"
		t.Run("announced="+form, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := newQuotaServer(50, 10, announce)
				srv.anthropic = form == "Anthropic"
				tr := New(WithBase(srv), WithPacing(), WithoutBudget(), WithMaxAttempts(3))
				openLoop(t, tr, 200, 10*time.Second)
				admitted, refused, throughput := srv.figures()
				sent := admitted + refused
				t.Logf("after the first second: %d sent, %d refused (%.2f%%), %.1f admitted a second",
					sent, refused, 100*float64(refused)/float64(sent), throughput)
				if announce {
					assert.Zero(t, refused, "429s with the quota announced")
				} else {
					assert.LessOrEqual(t, float64(refused), 0.01*float64(sent), "429s without the quota announced")
				}
				assert.GreaterOrEqual(t, throughput, 0.95*50, "admitted a second, of a quota of 50")
			})
		})
	}
}

// TestPacingFollowsARisingQuota: when the quota of 50 a second becomes
// 100 a second halfway through, the server admits 90 requests in a second
// within 3 s of the rise.
func TestPacingFollowsARisingQuota(t *testing.T) {
	for _, announce := range []bool{false, true} {
		t.Run("announced="+strconv.FormatBool(announce), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := newQuotaServer(50, 10, announce)
				srv.rise, srv.riseAt = 100, 5*time.Second
				tr := New(WithBase(srv), WithPacing(), WithoutBudget(), WithMaxAttempts(3))
				openLoop(t, tr, 200, 10*time.Second)
				rec := srv.recovery(90)
				t.Logf("90 admitted in a second %v after the rise", rec)
				assert.Positive(t, rec)
				assert.LessOrEqual(t, rec, 3*time.Second)
			})
		})
	}
}

// TestPacingCostsNothingUntilAThrottle: a host that never throttles is
// never paced: every request goes at once, with no pace event.
func TestPacingCostsNothingUntilAThrottle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &script{steps: statuses(200)}
		var events atomic.Int32
		tr := New(WithBase(s), WithPacing(), WithOnPace(func(PaceEvent) { events.Add(1) }))
		start := time.Now()
		for range 1000 {
			resp, err := tr.RoundTrip(get(t, "http://svc.test/"))
			require.NoError(t, err)
			resp.Body.Close()
		}
		assert.Zero(t, time.Since(start), "no request waited")
		assert.Zero(t, events.Load())
		assert.Zero(t, tr.PacedHosts())
	})
}

// TestPacingHoldsTurnsUntilRetryAfter: once a host answers 429 with
// Retry-After: 5, no request to it is sent before the 5 s are over, and a
// request that waited is reported to the pace hooks with its wait.
func TestPacingHoldsTurnsUntilRetryAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &script{steps: []step{{status: 429, header: http.Header{"Retry-After": {"5"}}}, {status: 200}}}
		var mu sync.Mutex
		var events []PaceEvent
		tr := New(WithBase(s), WithPacing(), WithMaxAttempts(1),
			WithOnPace(func(e PaceEvent) { mu.Lock(); events = append(events, e); mu.Unlock() }))
		start := time.Now()
		resp, err := tr.RoundTrip(get(t, "http://svc.test/"))
		require.NoError(t, err)
		assert.Equal(t, 429, resp.StatusCode)
		resp, err = tr.RoundTrip(get(t, "http://svc.test/"))
		require.NoError(t, err)
		assert.Equal(t, 200, resp.StatusCode)
		assert.GreaterOrEqual(t, s.times[1].Sub(start), 5*time.Second, "sent before the Retry-After ended")
		require.Len(t, events, 1)
		assert.Equal(t, 1, events[0].Attempt)
		assert.GreaterOrEqual(t, events[0].Wait, 5*time.Second)
		assert.False(t, events[0].Refused)
	})
}

// TestPacingRefusesAWaitBeyondTheLimit: a request whose turn is further
// off than pace.MaxWait, or than its deadline leaves, fails at once with a
// *pace.Error that says how long it would have waited, is never sent, and
// is reported as given up on with GiveUpPaced before any attempt.
func TestPacingRefusesAWaitBeyondTheLimit(t *testing.T) {
	tests := []struct {
		name    string
		opts    []pace.Option
		timeout time.Duration
		allowed time.Duration
	}{
		{"MaxWait", []pace.Option{pace.MaxWait(10 * time.Second)}, 0, 10 * time.Second},
		{"deadline, less 1 ms for the answer", nil, 2 * time.Second, 2*time.Second - time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := &script{steps: []step{{status: 429, header: http.Header{"Retry-After": {"60"}}}, {status: 200}}}
				var giveUps []GiveUpEvent
				var paces []PaceEvent
				tr := New(WithBase(s), WithPacing(tt.opts...), WithMaxAttempts(1),
					WithOnGiveUp(func(e GiveUpEvent) { giveUps = append(giveUps, e) }),
					WithOnPace(func(e PaceEvent) { paces = append(paces, e) }))
				resp, err := tr.RoundTrip(get(t, "http://svc.test/"))
				require.NoError(t, err)
				resp.Body.Close()
				giveUps = nil // the 429's own

				ctx := t.Context()
				if tt.timeout > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tt.timeout)
					defer cancel()
				}
				start := time.Now()
				_, err = tr.RoundTrip(get(t, "http://svc.test/").WithContext(ctx))
				assert.Zero(t, time.Since(start), "refused at once")
				assert.Equal(t, 1, s.count(), "never sent")
				var perr *pace.Error
				require.ErrorAs(t, err, &perr)
				assert.ErrorIs(t, err, pace.ErrWaitTooLong)
				assert.Equal(t, "svc.test", perr.Host)
				assert.Equal(t, tt.allowed, perr.Allowed)
				assert.Greater(t, perr.Wait, 55*time.Second, "the wait it would have had")
				var rerr *Error
				require.ErrorAs(t, err, &rerr)
				assert.Zero(t, rerr.Attempts)
				require.Len(t, giveUps, 1)
				assert.Equal(t, GiveUpPaced, giveUps[0].Reason)
				assert.Zero(t, giveUps[0].Attempt)
				require.Len(t, paces, 1)
				assert.True(t, paces[0].Refused)
			})
		})
	}
}

// TestPacingRetryIsGivenUpWhenItsTurnIsTooFar: a retry whose turn is too
// far off, the host having been throttled while it waited for its backoff,
// is given up on with GiveUpPaced, never sent, and the caller's error wraps
// the *pace.Error.
func TestPacingRetryIsGivenUpWhenItsTurnIsTooFar(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := &script{steps: []step{{status: 500}, {status: 429, header: http.Header{"Retry-After": {"30"}}}, {status: 200}}}
		var mu sync.Mutex
		var giveUps []GiveUpEvent
		tr := newTestTransport(base, 0, WithPacing(), WithBackoff(backoff.Constant(time.Second)),
			WithOnGiveUp(func(e GiveUpEvent) { mu.Lock(); giveUps = append(giveUps, e); mu.Unlock() }))
		errc := make(chan error, 1)
		go func() {
			resp, err := tr.RoundTrip(get(t, "http://svc.test/a"))
			if err == nil {
				resp.Body.Close()
			}
			errc <- err
		}()
		synctest.Wait() // the first request waits for its retry's backoff
		resp, err := tr.RoundTrip(get(t, "http://svc.test/b").WithContext(MaxAttempts(t.Context(), 1)))
		require.NoError(t, err)
		resp.Body.Close() // the host is held for 30 s

		err = <-errc
		var perr *pace.Error
		require.ErrorAs(t, err, &perr)
		assert.Equal(t, 10*time.Second, perr.Allowed)
		assert.Equal(t, 2, base.count(), "the retry is never sent")
		var rerr *Error
		require.ErrorAs(t, err, &rerr)
		assert.Equal(t, 1, rerr.Attempts)
		mu.Lock()
		defer mu.Unlock()
		require.Len(t, giveUps, 2)
		assert.Equal(t, GiveUpPaced, giveUps[1].Reason)
		assert.Equal(t, 1, giveUps[1].Attempt)
	})
}

// TestPacingLogsItsStartAndEnd: a host's pacing starts at its first
// throttle and ends after 30 s without one, each logged once at INFO.
func TestPacingLogsItsStartAndEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf bytes.Buffer
		s := &script{steps: []step{{status: 429}, {status: 200}}}
		tr := New(WithBase(s), WithPacing(), WithMaxAttempts(1),
			WithLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))))
		for range 3 {
			resp, err := tr.RoundTrip(get(t, "http://svc.test/"))
			require.NoError(t, err)
			resp.Body.Close()
		}
		assert.Contains(t, buf.String(), "retryhttp: pacing started")
		assert.NotContains(t, buf.String(), "retryhttp: pacing ended")
		assert.Equal(t, 1, tr.PacedHosts())
		time.Sleep(31 * time.Second) // virtual: the host is quiet
		resp, err := tr.RoundTrip(get(t, "http://svc.test/"))
		require.NoError(t, err)
		resp.Body.Close()
		assert.Contains(t, buf.String(), `"retryhttp: pacing ended" scheme=http host=svc.test`)
		assert.Zero(t, tr.PacedHosts())
		assert.Equal(t, 1, bytes.Count(buf.Bytes(), []byte("pacing started")))
	})
}

// TestPacingOnLoopback: over real loopback servers, a host that answers
// 429 with Retry-After: 30 gets no request before the 30 s are over (the
// next fails at once, never sent, past the default wait of 10 s), and
// another host is not paced at all.
func TestPacingOnLoopback(t *testing.T) {
	var calls atomic.Int32
	throttling := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Retry-After", "30")
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer throttling.Close()
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer other.Close()
	tr := New(WithPacing(), WithMaxAttempts(1))
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}

	resp, err := client.Get(throttling.URL)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode)

	_, err = client.Get(throttling.URL)
	var perr *pace.Error
	require.ErrorAs(t, err, &perr)
	assert.Greater(t, perr.Wait, 25*time.Second)
	assert.EqualValues(t, 1, calls.Load(), "the second request is never sent")

	resp, err = client.Get(other.URL)
	require.NoError(t, err, "another host is not paced")
	resp.Body.Close()
}

// TestPacingHedgesOnlyOnAFreeTurn: a slow request to a host paced at about
// one request a second gets no hedge, since no turn is free at once, where
// the same request to a host not paced is hedged.
func TestPacingHedgesOnlyOnAFreeTurn(t *testing.T) {
	for _, paced := range []bool{false, true} {
		t.Run("paced="+strconv.FormatBool(paced), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var sent atomic.Int32
				base := rtFunc(func(r *http.Request) (*http.Response, error) {
					sent.Add(1)
					h := http.Header{}
					if paced {
						// A bucket of 10 that refills in 10 s, spent.
						h.Set("X-Ratelimit-Limit-Requests", "10")
						h.Set("X-Ratelimit-Remaining-Requests", "0")
						h.Set("X-Ratelimit-Reset-Requests", "10s")
					}
					if r.URL.Path == "/slow" {
						select {
						case <-time.After(time.Second):
						case <-r.Context().Done():
							return nil, r.Context().Err()
						}
					}
					return &http.Response{StatusCode: 200, Header: h, Body: http.NoBody, Request: r}, nil
				})
				tr := New(WithBase(base), WithPacing(), WithHedging(hedge.Delay(100*time.Millisecond), hedge.MaxFraction(1)))
				resp, err := tr.RoundTrip(get(t, "http://svc.test/fast"))
				require.NoError(t, err)
				resp.Body.Close()
				time.Sleep(5 * time.Second) // virtual: the quota's turn comes
				sent.Store(0)
				resp, err = tr.RoundTrip(get(t, "http://svc.test/slow"))
				require.NoError(t, err)
				resp.Body.Close()
				if paced {
					assert.EqualValues(t, 1, sent.Load(), "no hedge without a free turn")
				} else {
					assert.Greater(t, sent.Load(), int32(1), "hedged")
				}
			})
		})
	}
}

func TestWithPacingRefusesANilOption(t *testing.T) {
	assert.PanicsWithValue(t, "retryhttp: WithPacing: nil pace.Option", func() { WithPacing(nil) })
}
