package retryhttp

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/retryhttp/retryhttp/backoff"
	"github.com/retryhttp/retryhttp/budget"
	"github.com/retryhttp/retryhttp/deadline"
	"github.com/retryhttp/retryhttp/hedge"
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
		tr.base = slow

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
