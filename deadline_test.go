package retryhttp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/retryhttp/retryhttp/backoff"
	"github.com/retryhttp/retryhttp/budget"
	"github.com/retryhttp/retryhttp/classify"
	"github.com/retryhttp/retryhttp/deadline"
	"github.com/retryhttp/retryhttp/hedge"
	"github.com/retryhttp/retryhttp/internal/deadlines"
	"github.com/retryhttp/retryhttp/internal/wire"
	"github.com/retryhttp/retryhttp/server"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// allFormats sends the deadline in every format.
var allFormats = []deadline.Format{deadline.GRPCTimeout, deadline.EnvoyTimeout, deadline.ConnectTimeout, deadline.Milliseconds("X-Deadline-Ms")}

// deadlineHeaders returns the deadline headers of h, in allFormats' order.
func deadlineHeaders(h http.Header) []string {
	var got []string
	for _, f := range allFormats {
		got = append(got, strings.Join(h[string(f)], ","))
	}
	return got
}

func TestDeadlineHeaderOnEachAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := &script{steps: statuses(503, 503, 200)}
		var sent []time.Duration
		observe := rtFunc(func(r *http.Request) (*http.Response, error) {
			d, ok := deadline.Sent(r.Context())
			require.True(t, ok)
			sent = append(sent, d)
			return base.RoundTrip(r)
		})
		tr := newTestTransport(observe, 0.5, WithDeadlineHeader(allFormats...), WithAttemptHeader("Retry-Attempt"),
			WithBackoff(backoff.Constant(50*time.Millisecond)), WithoutBudget())
		req := withDeadline(t, "http://svc.test/", 300*time.Millisecond)
		req.Header.Set("X-Caller", "kept")

		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, 200, resp.StatusCode)
		require.Equal(t, 3, base.count())
		want := [][]string{
			{"300m", "300", "300", "300"},
			{"250m", "250", "250", "250"}, // sent 50 ms later
			{"200m", "200", "200", "200"},
		}
		for i, h := range base.headers {
			assert.Equal(t, want[i], deadlineHeaders(h), "attempt %d", i+1)
			assert.Equal(t, "kept", h.Get("X-Caller"))
			assert.Equal(t, []string{"1/3", "2/3", "3/3"}[i], h.Get("Retry-Attempt"))
		}
		assert.Equal(t, []time.Duration{300 * time.Millisecond, 250 * time.Millisecond, 200 * time.Millisecond}, sent)
		assert.Equal(t, http.Header{"X-Caller": {"kept"}}, req.Header, "the caller's request is not modified")
	})
}

// TestDeadlineHeaderLeavesTheCallersHeader sends the deadline with each
// attempt of a request that is otherwise sent as the caller made it (no
// attempt header): each attempt has a header of its own, and the caller's
// is not modified.
func TestDeadlineHeaderLeavesTheCallersHeader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := &script{steps: statuses(503, 200)}
		tr := newTestTransport(base, 0.5, WithDeadlineHeader(deadline.GRPCTimeout), WithBackoff(backoff.Constant(50*time.Millisecond)))
		req := withDeadline(t, "http://svc.test/", 300*time.Millisecond)
		req.Header.Set("X-Caller", "kept")

		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, 2, base.count())
		assert.Equal(t, []string{"300m"}, base.headers[0][string(deadline.GRPCTimeout)])
		assert.Equal(t, []string{"250m"}, base.headers[1][string(deadline.GRPCTimeout)])
		assert.Equal(t, http.Header{"X-Caller": {"kept"}}, req.Header, "the caller's request is not modified")
	})
}

// TestHedgeDeadlineHeaderLeavesTheFirstAttempts sends a hedge, with its
// deadline, while the first attempt is still waiting: the hedge's header is
// its own, and neither the first attempt's nor the caller's changes.
func TestHedgeDeadlineHeaderLeavesTheFirstAttempts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var seen []http.Header
		base := rtFunc(func(r *http.Request) (*http.Response, error) {
			mu.Lock()
			seen = append(seen, r.Header)
			n := len(seen)
			mu.Unlock()
			if n == 1 {
				<-r.Context().Done() // the first attempt waits for the hedge to win
				return nil, r.Context().Err()
			}
			return &http.Response{StatusCode: 200, Header: http.Header{}, Body: http.NoBody, Request: r}, nil
		})
		tr := newTestTransport(base, 0, WithHedging(hedge.Delay(10*time.Millisecond)), WithDeadlineHeader(deadline.GRPCTimeout))
		req := withDeadline(t, "http://svc.test/", 300*time.Millisecond)

		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		resp.Body.Close()
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		require.Len(t, seen, 2)
		assert.Equal(t, []string{"300m"}, seen[0][string(deadline.GRPCTimeout)], "the first attempt's header")
		assert.Equal(t, []string{"290m"}, seen[1][string(deadline.GRPCTimeout)], "the hedge's header")
		assert.Empty(t, req.Header, "the caller's request is not modified")
	})
}

// TestFirstAttemptNotSentTellsTheHandler makes a call, within a server.Handler,
// whose first attempt is not sent for lack of time: the Handler learns that
// a dependency was given up on, and its 503 tells its own caller not to
// retry.
func TestFirstAttemptNotSentTellsTheHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := &script{steps: statuses(200)}
		tr := newTestTransport(base, 0.5, WithDeadlineHeader(deadline.GRPCTimeout))
		h := server.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ctx, cancel := context.WithTimeout(r.Context(), 999*time.Microsecond)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://svc.test/", nil)
			require.NoError(t, err)
			_, err = tr.RoundTrip(req)
			require.ErrorIs(t, err, ErrNoTimeLeft)
			w.WriteHeader(http.StatusServiceUnavailable)
		}))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
		assert.Zero(t, base.count(), "attempts sent")
		assert.Equal(t, "false", rec.Result().Header.Get(wire.ShouldRetryHeader))
	})
}

func TestDeadlineHeaderRoundsTheTimeLeft(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := &script{steps: statuses(200)}
		tr := newTestTransport(base, 0.5, WithDeadlineHeader(allFormats...))
		req := withDeadline(t, "http://svc.test/", 123456789*time.Nanosecond)
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, []string{"123457u", "123", "123", "123"}, deadlineHeaders(base.headers[0]))
	})
}

func TestNoDeadlineNoHeader(t *testing.T) {
	base := &script{steps: statuses(503, 200)}
	tr := newTestTransport(base, 0, WithDeadlineHeader(allFormats...), WithBackoff(backoff.Constant(0)))
	resp, err := tr.RoundTrip(get(t, "http://svc.test/"))
	require.NoError(t, err)
	resp.Body.Close()
	for _, h := range base.headers {
		assert.Equal(t, []string{"", "", "", ""}, deadlineHeaders(h))
	}
}

// TestDeadlineHeaderWithoutDeadlineAllocatesNothing pins the promise that a
// request without a deadline costs nothing more with deadline headers on.
func TestDeadlineHeaderWithoutDeadlineAllocatesNothing(t *testing.T) {
	tr := New(WithBase(newStub()), WithDeadlineHeader(deadline.GRPCTimeout))
	get, _ := http.NewRequest(http.MethodGet, "http://svc.test/items", nil)
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		if _, err := tr.RoundTrip(get); err != nil {
			t.Fatal(err)
		}
	}))
}

// TestDeadlineWithoutHeaderAllocatesNothing pins the cost of a GET with a
// deadline that succeeds at once, deadline headers off: its answer time is
// recorded for the check before a retry, without allocating.
func TestDeadlineWithoutHeaderAllocatesNothing(t *testing.T) {
	tr := New(WithBase(newStub()))
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	get, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://svc.test/items", nil)
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		if _, err := tr.RoundTrip(get); err != nil {
			t.Fatal(err)
		}
	}))
}

func TestFirstAttemptNotSentWithoutTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := &script{steps: statuses(200)}
		var events []GiveUpEvent
		tr := newTestTransport(base, 0.5, WithDeadlineHeader(deadline.GRPCTimeout), WithOnGiveUp(func(e GiveUpEvent) { events = append(events, e) }))
		ctx, cancel := context.WithTimeout(t.Context(), 999*time.Microsecond)
		defer cancel()
		req, body := withBody(t, ctx, http.MethodPut, "http://svc.test/", "payload", true)

		resp, err := tr.RoundTrip(req)
		assert.Nil(t, resp)
		require.Error(t, err)
		assert.ErrorIs(t, err, ErrNoTimeLeft)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		var rerr *Error
		require.ErrorAs(t, err, &rerr)
		assert.Zero(t, rerr.Attempts)
		assert.True(t, rerr.Timeout())
		assert.Zero(t, base.count(), "attempts sent")
		assert.EqualValues(t, 1, body.closes.Load(), "request body closes")
		require.Len(t, events, 1)
		assert.Equal(t, GiveUpDeadline, events[0].Reason)
		assert.Zero(t, events[0].Attempt)
		assert.Equal(t, ErrNoTimeLeft, events[0].Err)
		assert.Equal(t, 999*time.Microsecond, events[0].TimeLeft)
	})
}

// TestRetryNotSentWhenTheWaitLeftTooLittle makes the clock jump during a
// retry's wait, as a late timer does, so that less than 1 ms is left when
// the retry is due: it is not sent, and its budget tokens come back.
func TestRetryNotSentWhenTheWaitLeftTooLittle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := &script{steps: statuses(503)}
		var skew time.Duration
		var events []GiveUpEvent
		bucket := budget.NewBucket(budget.Capacity(100))
		tr := newTestTransport(base, 0.5, WithDeadlineHeader(deadline.GRPCTimeout), WithBackoff(backoff.Constant(10*time.Millisecond)),
			WithBudget(bucket),
			WithOnRetry(func(RetryEvent) { skew = 89500 * time.Microsecond }),
			WithOnGiveUp(func(e GiveUpEvent) { events = append(events, e) }))
		tr.now = func() time.Time { return time.Now().Add(skew) }
		req := withDeadline(t, "http://svc.test/", 100*time.Millisecond)

		resp, err := tr.RoundTrip(req)
		assert.Nil(t, resp)
		assert.ErrorIs(t, err, ErrNoTimeLeft)
		var rerr *Error
		require.ErrorAs(t, err, &rerr)
		assert.Equal(t, 1, rerr.Attempts)
		assert.Equal(t, 1, base.count())
		base.requireDiscardedClosed(t, nil)
		assert.Equal(t, 100*budget.Token, bucket.Balance(), "the retry's tokens came back")
		require.Len(t, events, 1)
		assert.Equal(t, GiveUpDeadline, events[0].Reason)
		assert.Equal(t, 503, events[0].StatusCode)
	})
}

func TestDeadlineLogged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf bytes.Buffer
		logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
		base := &script{steps: statuses(503)}
		tr := newTestTransport(base, 0.5, WithLogger(logger), WithBackoff(backoff.Constant(10*time.Millisecond)), WithoutBudget())
		req := withDeadline(t, "http://svc.test/", 100*time.Millisecond)
		base.steps = []step{{status: 503}}
		slow := rtFunc(func(r *http.Request) (*http.Response, error) {
			time.Sleep(40 * time.Millisecond)
			return base.RoundTrip(r)
		})
		tr.swapBase(slow)

		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		resp.Body.Close()
		// 40 ms: first answer; retry at 50 ms with 50 ms left; second
		// answer at 90 ms: 10 ms left, which the wait would use up: the
		// retry would be sent with none left, less than 1 ms.
		assert.Contains(t, buf.String(), `level=DEBUG msg="retryhttp: retrying" method=GET url=http://svc.test/ attempt=1 status=503 delay=10ms time_left=50ms`)
		assert.Contains(t, buf.String(), `level=INFO msg="retryhttp: not retrying" method=GET url=http://svc.test/ attempt=2 status=503 reason="too little time left before the deadline" delay=10ms time_left=0s host_latency=0s`)
	})
}

func TestNoTimeLeftLogged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf bytes.Buffer
		logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
		tr := newTestTransport(&script{steps: statuses(200)}, 0.5, WithLogger(logger), WithDeadlineHeader(deadline.GRPCTimeout))
		req := withDeadline(t, "http://svc.test/", 500*time.Microsecond)
		_, err := tr.RoundTrip(req)
		require.Error(t, err)
		assert.Contains(t, buf.String(), `level=DEBUG msg="retryhttp: not sending" method=GET url=http://svc.test/ attempt=0 reason="too little time left before the deadline" time_left=500µs`)
		assert.NotContains(t, buf.String(), "level=INFO", "a caller with no time left is not an operator's concern")
	})
}

func TestWithDeadlineHeaderPanics(t *testing.T) {
	assert.Panics(t, func() { WithDeadlineHeader() })
	assert.Panics(t, func() { WithDeadlineHeader("bad name") })
}

func TestErrNoTimeLeft(t *testing.T) {
	assert.True(t, errors.Is(ErrNoTimeLeft, context.DeadlineExceeded))
	assert.False(t, errors.Is(ErrNoTimeLeft, context.Canceled))
	assert.Equal(t, "retryhttp: less than 1ms left before the deadline", ErrNoTimeLeft.Error())
}

// TestErrNoTimeLeftIsATimeout checks what ErrNoTimeLeft tells of itself to
// code that asks an error whether it is a timeout, and what kind it is.
func TestErrNoTimeLeftIsATimeout(t *testing.T) {
	var timeout interface{ Timeout() bool }
	require.ErrorAs(t, ErrNoTimeLeft, &timeout)
	assert.True(t, timeout.Timeout())
	var typed interface{ ErrorType() string }
	require.ErrorAs(t, ErrNoTimeLeft, &typed)
	assert.Equal(t, "timeout", typed.ErrorType())
}

// BenchmarkDeadlineOverhead measures a GET that succeeds at once through a
// default Transport, with and without a deadline on its context, and with
// and without deadline headers.
func BenchmarkDeadlineOverhead(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	for _, bm := range []struct {
		name string
		ctx  context.Context
		opts []Option
	}{
		{"no deadline", context.Background(), nil},
		{"no deadline, headers on", context.Background(), []Option{WithDeadlineHeader(deadline.GRPCTimeout)}},
		{"deadline", ctx, nil},
		{"deadline, headers on", ctx, []Option{WithDeadlineHeader(deadline.GRPCTimeout)}},
		{"deadline, four headers on", ctx, []Option{WithDeadlineHeader(allFormats...)}},
	} {
		b.Run(bm.name, func(b *testing.B) {
			tr := New(append([]Option{WithBase(newStub())}, bm.opts...)...)
			req, _ := http.NewRequestWithContext(bm.ctx, http.MethodGet, "http://svc.test/items", nil)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := tr.RoundTrip(req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// withDeadline returns a GET of url whose context has d left.
func withDeadline(t *testing.T, url string, d time.Duration) *http.Request {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	require.NoError(t, err)
	return req
}

// warm sends n GETs with a deadline of a minute through tr, each of which
// must succeed, so that tr learns the host's answer times.
func warm(t *testing.T, tr http.RoundTripper, n int) {
	t.Helper()
	for range n {
		resp, err := tr.RoundTrip(withDeadline(t, "http://svc.test/", time.Minute))
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, 200, resp.StatusCode)
	}
}

func TestRetryNeedsTheHostsTypicalAnswer(t *testing.T) {
	const latency = 40 * time.Millisecond
	tests := []struct {
		name     string
		warm     int           // successful requests before
		deadline time.Duration // of the request that fails once
		sent     int           // its attempts
	}{
		{"too little time for a typical answer", deadlines.MinSamples, 60 * time.Millisecond, 1},
		{"time for a typical answer", deadlines.MinSamples, 100 * time.Millisecond, 2},
		// The failed first attempt's answer is the 20th.
		{"too few answers known: the retry needs 1 ms", deadlines.MinSamples - 2, 60 * time.Millisecond, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fail := atomic.Bool{}
				base := &slowBase{answer: func(int) (time.Duration, int) {
					if fail.CompareAndSwap(true, false) {
						return latency, 503
					}
					return latency, 200
				}}
				var events []GiveUpEvent
				bucket := budget.NewBucket()
				tr := newTestTransport(base, 0, WithBudget(bucket), WithOnGiveUp(func(e GiveUpEvent) { events = append(events, e) }))
				warm(t, tr, tt.warm)
				calls := base.calls()
				fail.Store(true)

				resp, err := tr.RoundTrip(withDeadline(t, "http://svc.test/", tt.deadline))
				assert.Equal(t, tt.sent, base.calls()-calls, "attempts sent")
				if tt.sent > 1 {
					assert.Empty(t, events)
					if tt.deadline-latency < latency {
						assert.ErrorIs(t, err, context.DeadlineExceeded, "the retry could not finish")
						return
					}
					require.NoError(t, err)
					resp.Body.Close()
					assert.Equal(t, 200, resp.StatusCode)
					return
				}
				require.NoError(t, err)
				resp.Body.Close()
				assert.Equal(t, 503, resp.StatusCode)
				assert.Equal(t, 500*budget.Token, bucket.Balance(), "no token spent")
				require.Len(t, events, 1)
				e := events[0]
				assert.Equal(t, GiveUpDeadline, e.Reason)
				assert.Equal(t, tt.deadline-latency, e.TimeLeft)
				// The median, to the precision of its bucket (12.5%).
				assert.InDelta(t, latency, e.HostLatency, float64(latency)/8)
			})
		})
	}
}

// TestTypicalAnswerFollowsASlowerHost makes a host that answered in 5 ms
// turn slow, 40 ms: within 200 answers, its typical answer is 40 ms, since
// the median covers only its last 100 to 200 answers.
func TestTypicalAnswerFollowsASlowerHost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var latency atomic.Int64
		latency.Store(int64(5 * time.Millisecond))
		base := &slowBase{answer: func(int) (time.Duration, int) { return time.Duration(latency.Load()), 200 }}
		tr := newTestTransport(base, 0)
		req := withDeadline(t, "http://svc.test/", time.Minute)
		warm(t, tr, 3*deadlines.Window)
		// The median, to the precision of its bucket (12.5%).
		assert.InDelta(t, 5*time.Millisecond, tr.snd.Typical(req), float64(5*time.Millisecond)/8)
		latency.Store(int64(40 * time.Millisecond))
		warm(t, tr, 2*deadlines.Window)
		assert.InDelta(t, 40*time.Millisecond, tr.snd.Typical(req), float64(40*time.Millisecond)/8)
	})
}

// TestGiveUpTimeLeftOnlyForTheDeadline gives up on a request with a
// deadline for another reason, its attempts exhausted: the event's TimeLeft
// and HostLatency are 0, as they are for any reason but GiveUpDeadline.
func TestGiveUpTimeLeftOnlyForTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := &slowBase{answer: func(int) (time.Duration, int) { return 40 * time.Millisecond, 503 }}
		var events []GiveUpEvent
		tr := newTestTransport(base, 0, WithMaxAttempts(deadlines.MinSamples+1), WithoutBudget(),
			WithOnGiveUp(func(e GiveUpEvent) { events = append(events, e) }))
		resp, err := tr.RoundTrip(withDeadline(t, "http://svc.test/", time.Hour))
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, deadlines.MinSamples+1, base.calls(), "attempts sent")
		require.Len(t, events, 1)
		assert.Equal(t, GiveUpAttemptsExhausted, events[0].Reason)
		assert.Zero(t, events[0].TimeLeft)
		assert.Zero(t, events[0].HostLatency, "though the host's typical answer is known")
	})
}

func TestFirstAttemptAlwaysSent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := &slowBase{answer: func(int) (time.Duration, int) { return 40 * time.Millisecond, 200 }}
		tr := newTestTransport(base, 0)
		warm(t, tr, deadlines.MinSamples)
		calls := base.calls()
		_, err := tr.RoundTrip(withDeadline(t, "http://svc.test/", 10*time.Millisecond))
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, 1, base.calls()-calls, "the first attempt, though it could not finish")
	})
}

func TestAnswerTimesOnlyWithADeadline(t *testing.T) {
	tr := New(WithBase(newStub()))
	tr.snd.RecordEvery = 1
	for range 10 {
		_, err := tr.RoundTrip(get(t, "http://a.test/"))
		require.NoError(t, err)
	}
	assert.Zero(t, tr.snd.Answers.Len(), "no host timed without a deadline")
	_, err := tr.RoundTrip(withDeadline(t, "http://b.test/", time.Minute))
	require.NoError(t, err)
	require.Equal(t, 1, tr.snd.Answers.Len())
	assert.NotNil(t, tr.snd.Answers.Lookup(wire.HostKey{Scheme: "http", Host: "b.test"}))
	hedged := New(WithHedging())
	assert.False(t, hedged.snd.Records, "hedging keeps answer times")
	assert.Same(t, hedged.hedge.Table(), hedged.snd.Answers)
}

func TestHedgeNeedsTheHostsTypicalAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Answers in 40 ms, so that a hedge after 45 ms of a request with a
		// deadline of 80 ms has 35 ms left.
		slow := atomic.Bool{}
		base := &slowBase{answer: func(int) (time.Duration, int) {
			if slow.Load() {
				return time.Second, 200
			}
			return 40 * time.Millisecond, 200
		}}
		var hedges hedgeEvents
		tr := newTestTransport(base, 0, WithHedging(hedge.Delay(45*time.Millisecond)), hedges.option())
		warm(t, tr, deadlines.MinSamples)
		require.Zero(t, hedges.count())
		slow.Store(true)

		_, err := tr.RoundTrip(withDeadline(t, "http://svc.test/", 80*time.Millisecond))
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Zero(t, hedges.count(), "35 ms left at the hedge: less than a typical answer")

		resp, err := tr.RoundTrip(withDeadline(t, "http://svc.test/", 2*time.Second))
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, 2, hedges.count(), "time enough: both hedges")
	})
}

func TestHedgeCarriesItsOwnDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var seen []string
		base := rtFunc(func(r *http.Request) (*http.Response, error) {
			mu.Lock()
			seen = append(seen, r.Header.Get(string(deadline.GRPCTimeout)))
			n := len(seen)
			mu.Unlock()
			d := time.Second
			if n > 1 {
				d = time.Millisecond
			}
			select {
			case <-time.After(d):
			case <-r.Context().Done():
				return nil, r.Context().Err()
			}
			return &http.Response{StatusCode: 200, Header: http.Header{}, Body: http.NoBody, Request: r}, nil
		})
		tr := newTestTransport(base, 0, WithHedging(hedge.Delay(10*time.Millisecond)), WithDeadlineHeader(deadline.GRPCTimeout))
		resp, err := tr.RoundTrip(withDeadline(t, "http://svc.test/", 300*time.Millisecond))
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, []string{"300m", "290m"}, seen)
	})
}

// TestDeadlineCheckFigures measures what the check before a retry saves,
// for a host that takes 30 to 50 ms to answer and fails half its attempts
// with a 503, called with a deadline of 100 ms and the default backoff, a
// thousand requests one after another: the attempts sent, those the
// deadline cut off, the budget tokens they cost, and the requests that
// succeeded, with the check and without it. The documentation quotes its
// table.
func TestDeadlineCheckFigures(t *testing.T) {
	type figures struct{ sent, cut, cutTokens, ok int }
	run := func(check bool) (f figures) {
		synctest.Test(t, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			var mu sync.Mutex
			draw := func() (time.Duration, bool) {
				mu.Lock()
				defer mu.Unlock()
				return 30*time.Millisecond + time.Duration(rng.Int64N(int64(20*time.Millisecond))), rng.IntN(2) == 0
			}
			var cut atomic.Int32
			base := rtFunc(func(r *http.Request) (*http.Response, error) {
				d, fails := draw()
				select {
				case <-time.After(d):
				case <-r.Context().Done():
					cut.Add(1)
					return nil, r.Context().Err()
				}
				status := 200
				if fails {
					status = 503
				}
				return &http.Response{StatusCode: status, Header: http.Header{}, Body: http.NoBody, Request: r}, nil
			})
			bucket := &countingBudget{Budget: budget.NewBucket(budget.Capacity(1e9))}
			var sent atomic.Int32
			counted := rtFunc(func(r *http.Request) (*http.Response, error) {
				sent.Add(1)
				return base.RoundTrip(r)
			})
			tr := New(WithBase(counted), WithBudget(bucket))
			tr.rand = rand.New(rand.NewPCG(3, 4)).Float64
			tr.snd.NoFitCheck = !check
			for range 1000 {
				resp, err := tr.RoundTrip(withDeadline(t, "http://svc.test/", 100*time.Millisecond))
				if err == nil {
					if resp.StatusCode == 200 {
						f.ok++
					}
					resp.Body.Close()
				}
			}
			f.sent, f.cut = int(sent.Load()), int(cut.Load())
			f.cutTokens = f.cut * 5 // every attempt cut off was a retry, at 5 tokens
			require.LessOrEqual(t, f.cut, int(bucket.withdrawals.Load()), "only retries are cut off")
		})
		return f
	}
	on, off := run(true), run(false)
	var b strings.Builder
	b.WriteString("\n| 1000 requests, 100 ms deadline, host 30-50 ms, 50% 503 | attempts sent | cut off by the deadline | tokens spent on them | succeeded |\n| --- | --- | --- | --- | --- |\n")
	for _, r := range []struct {
		name string
		f    figures
	}{{"without the check", off}, {"with the check", on}} {
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d |\n", r.name, r.f.sent, r.f.cut, r.f.cutTokens, r.f.ok)
	}
	t.Log(b.String())
	assert.Less(t, on.cut, off.cut/5, "the check stops most attempts that cannot finish")
	assert.GreaterOrEqual(t, on.ok, off.ok*95/100, "and costs few successes")
}

// countingBudget counts the withdrawals of a Budget.
type countingBudget struct {
	budget.Budget

	withdrawals atomic.Int32
}

func (b *countingBudget) Withdraw(req *http.Request, v classify.Verdict) (budget.Millitokens, error) {
	took, err := b.Budget.Withdraw(req, v)
	if err == nil {
		b.withdrawals.Add(1)
	}
	return took, err
}

func TestNoHedgeWithoutAMillisecond(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := &slowBase{answer: func(int) (time.Duration, int) { return time.Second, 200 }}
		var hedges hedgeEvents
		tr := newTestTransport(base, 0, WithHedging(hedge.Delay(10*time.Millisecond)), WithDeadlineHeader(deadline.GRPCTimeout), hedges.option())
		_, err := tr.RoundTrip(withDeadline(t, "http://svc.test/", 10*time.Millisecond+500*time.Microsecond))
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Zero(t, hedges.count(), "0.5 ms left at the hedge")
		assert.Equal(t, 1, base.calls())
	})
}

// TestAnswerTimesOfOneRequestInFour: a Transport's own table records the
// answer time of one request in four sent at once, drawn at random, so that
// most cost no clock reading: of 400, between 50 and 150 (100 expected; 5.8
// standard deviations either way).
func TestAnswerTimesOfOneRequestInFour(t *testing.T) {
	tr := New(WithBase(newStub()))
	for range 400 {
		_, err := tr.RoundTrip(withDeadline(t, "http://a.test/", time.Minute))
		require.NoError(t, err)
	}
	h := tr.snd.Answers.Lookup(wire.HostKey{Scheme: "http", Host: "a.test"})
	require.NotNil(t, h)
	assert.Positive(t, h.Quantile(0.5, 50), "more than 50 recorded")
	assert.Zero(t, h.Quantile(0.5, 150), "fewer than 150 recorded")
}
