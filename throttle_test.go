package retryhttp

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"testing/synctest"
	"time"

	"github.com/retryhttp/retryhttp/backoff"
	"github.com/retryhttp/retryhttp/budget"
	"github.com/retryhttp/retryhttp/deadline"
	"github.com/retryhttp/retryhttp/internal/config"
	"github.com/retryhttp/retryhttp/internal/throttling"
	"github.com/retryhttp/retryhttp/internal/wire"
	"github.com/retryhttp/retryhttp/resume"
	"github.com/retryhttp/retryhttp/server"
	"github.com/retryhttp/retryhttp/throttle"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hostBase is an in-memory base that answers each host with the status its
// function gives for the host's n-th attempt (from 0), counting attempts
// per host.
type hostBase struct {
	mu       sync.Mutex
	attempts map[string]int
	status   func(host string, n int) int
}

func newHostBase(status func(host string, n int) int) *hostBase {
	return &hostBase{attempts: map[string]int{}, status: status}
}

// switchingBase answers 503 while failing is true, and 200 otherwise.
func switchingBase(failing *atomic.Bool) *hostBase {
	return newHostBase(func(string, int) int {
		if failing.Load() {
			return 503
		}
		return 200
	})
}

func (b *hostBase) RoundTrip(r *http.Request) (*http.Response, error) {
	b.mu.Lock()
	n := b.attempts[r.URL.Host]
	b.attempts[r.URL.Host]++
	b.mu.Unlock()
	code := b.status(r.URL.Host, n)
	return &http.Response{StatusCode: code, Header: http.Header{}, Body: http.NoBody, Request: r}, nil
}

func (b *hostBase) count(host string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.attempts[host]
}

// always answers every attempt with code.
func always(code int) func(string, int) int { return func(string, int) int { return code } }

// failFirst answers a host's first n attempts with 503, and 200 after.
func failFirst(n int) func(string, int) int {
	return func(_ string, i int) int {
		if i < n {
			return 503
		}
		return 200
	}
}

// rejection returns the probability Transport.Rejections reports for host,
// and whether the host is counted at all.
func rejection(tr *Transport, host string) (float64, bool) {
	for r := range tr.Rejections() {
		if r.Host == host {
			return r.Probability, true
		}
	}
	return 0, false
}

// roundTrip sends a GET of url through tr and closes the response body.
func roundTrip(tr *Transport, url string) (*http.Response, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := tr.RoundTrip(req)
	if resp != nil {
		resp.Body.Close()
	}
	return resp, err
}

func TestThrottleRefusesWithoutSending(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := newHostBase(always(503))
		var events []GiveUpEvent
		tr := newTestTransport(base, 0.95, WithMaxAttempts(1), WithAdaptiveThrottling(),
			WithOnGiveUp(func(e GiveUpEvent) { events = append(events, e) }))
		for range throttling.DefaultMinRequests {
			_, err := roundTrip(tr, "http://svc.test/")
			require.NoError(t, err)
		}
		events = nil
		tr.rand = func() float64 { return 0.5 } // below 20/21: refused

		req, body := withBody(t, context.Background(), http.MethodPut, "http://svc.test/x", "payload", true)
		resp, err := tr.RoundTrip(req)
		assert.Nil(t, resp)
		require.ErrorIs(t, err, ErrThrottled)
		var e *Error
		require.ErrorAs(t, err, &e)
		assert.Zero(t, e.Attempts)
		assert.EqualValues(t, 1, body.closes.Load(), "request body closes")
		assert.Equal(t, throttling.DefaultMinRequests, base.count("svc.test"), "attempts sent")
		require.Len(t, events, 1)
		assert.Equal(t, GiveUpThrottled, events[0].Reason)
		assert.Zero(t, events[0].Attempt)
		assert.ErrorIs(t, events[0].Err, ErrThrottled)
		assert.Same(t, req, events[0].Request)

		p, _ := rejection(tr, "svc.test")
		assert.InDelta(t, 0.9, p, 1e-9)
	})
}

func TestThrottleCountsEveryAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// A request that fails counts every attempt it made: 7 requests
		// of 3 failing attempts are 21 attempts not accepted.
		base := newHostBase(always(503))
		tr := newTestTransport(base, 0.95, WithoutBudget(), WithAdaptiveThrottling())
		for range 7 {
			_, err := roundTrip(tr, "http://svc.test/")
			require.NoError(t, err)
		}
		assert.Equal(t, 21, base.count("svc.test"))
		p, _ := rejection(tr, "svc.test")
		assert.InDelta(t, 0.9, p, 1e-9)
	})
}

// counts returns the attempts and the accepted attempts in the window of
// host, as the rejection probability sees them.
func counts(tr *Transport, host string) (requests, accepts int64) {
	return tr.throttle.Window("http", host)
}

// TestThrottleCountsARequestWhenItEnds checks that a failed attempt that
// will be retried counts nothing while its request waits, and that a
// request its retry rescued counts every attempt for the host.
func TestThrottleCountsARequestWhenItEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// The host's first attempt fails; then 503 and 200.
		base := newHostBase(failFirst(2))
		tr := newTestTransport(base, 0.999, WithBackoff(backoff.Constant(time.Second)),
			WithAdaptiveThrottling(throttle.MinRequests(1)))
		get := func() error {
			req, _ := http.NewRequestWithContext(MaxAttempts(context.Background(), 1), http.MethodGet, "http://svc.test/", nil)
			_, err := tr.RoundTrip(req)
			return err
		}
		require.NoError(t, get())
		req, acc := counts(tr, "svc.test")
		require.Equal(t, [2]int64{1, 0}, [2]int64{req, acc}, "after a request that failed")

		done := make(chan error)
		go func() {
			_, err := roundTrip(tr, "http://svc.test/")
			done <- err
		}()
		synctest.Wait() // the request waits to retry its failed attempt
		req, acc = counts(tr, "svc.test")
		assert.Equal(t, [2]int64{1, 0}, [2]int64{req, acc}, "while a request waits to retry")
		p, _ := rejection(tr, "svc.test")
		assert.InDelta(t, 0.5, p, 1e-9, "while a request waits to retry")

		require.NoError(t, <-done)
		req, acc = counts(tr, "svc.test")
		// Its two attempts, accepted; the host was being refused (p 0.5),
		// so the success forgot the failure before it.
		assert.Equal(t, [2]int64{2, 2}, [2]int64{req, acc}, "after the retry rescued it")
		p, _ = rejection(tr, "svc.test")
		assert.Zero(t, p, "after the retry rescued it")
	})
}

// TestThrottleCountsWhatEndsARequest checks what each way a request ends
// counts: its attempts, accepted or not, or nothing.
func TestThrottleCountsWhatEndsARequest(t *testing.T) {
	retryAfter := func(v string) func(*http.Request, int) *http.Response {
		return func(r *http.Request, _ int) *http.Response {
			return &http.Response{StatusCode: 503, Header: http.Header{"Retry-After": {v}}, Body: http.NoBody, Request: r}
		}
	}
	status := func(codes ...int) func(*http.Request, int) *http.Response {
		return func(r *http.Request, n int) *http.Response {
			return &http.Response{StatusCode: codes[min(n, len(codes)-1)], Header: http.Header{}, Body: http.NoBody, Request: r}
		}
	}
	tests := []struct {
		name     string
		opts     []Option
		backoff  backoff.Func // nil: a millisecond
		method   string
		ctx      func(context.Context) (context.Context, context.CancelFunc)
		answer   func(*http.Request, int) *http.Response
		requests int64
		accepts  int64
	}{
		{name: "attempts exhausted", answer: status(503), requests: 3},
		{name: "budget exhausted", opts: []Option{WithBudget(budget.NewPerHost(budget.Capacity(5), budget.TimeoutCost(5)))}, answer: status(503), requests: 2},
		{name: "not resendable", method: http.MethodPost, answer: status(503), requests: 1},
		{name: "Retry-After beyond the limit", answer: retryAfter("3600"), requests: 1},
		{name: "delay past the deadline", answer: retryAfter("10"), requests: 1,
			ctx: func(ctx context.Context) (context.Context, context.CancelFunc) {
				return context.WithTimeout(ctx, 5*time.Second)
			}},
		{name: "caller cancels during the wait", answer: status(503), requests: 0,
			backoff: backoff.Constant(time.Hour),
			ctx: func(ctx context.Context) (context.Context, context.CancelFunc) {
				ctx, cancel := context.WithCancel(ctx)
				stop := time.AfterFunc(time.Second, cancel)
				return ctx, func() { stop.Stop(); cancel() }
			}},
		{name: "final status", answer: status(404), requests: 1, accepts: 1},
		{name: "rescued by the third attempt", answer: status(503, 503, 200), requests: 3, accepts: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var n atomic.Int64
				base := rtFunc(func(r *http.Request) (*http.Response, error) {
					if r.URL.Path == "/prime" {
						return &http.Response{StatusCode: 503, Header: http.Header{}, Body: http.NoBody, Request: r}, nil
					}
					return tt.answer(r, int(n.Add(1)-1)), nil
				})
				opts := []Option{WithRetryAfterLimit(time.Minute), WithAdaptiveThrottling()}
				if tt.backoff == nil {
					opts = append(opts, WithBackoff(backoff.Constant(time.Millisecond)))
				} else {
					opts = append(opts, WithBackoff(tt.backoff))
				}
				tr := newTestTransport(base, 0.999, append(opts, tt.opts...)...)
				// One failure, so that the host has counts from the start.
				req, _ := http.NewRequestWithContext(MaxAttempts(context.Background(), 1), http.MethodGet, "http://svc.test/prime", nil)
				_, err := tr.RoundTrip(req)
				require.NoError(t, err)

				ctx, cancel := context.Background(), context.CancelFunc(func() {})
				if tt.ctx != nil {
					ctx, cancel = tt.ctx(ctx)
				}
				defer cancel()
				method := http.MethodGet
				if tt.method != "" {
					method = tt.method
				}
				req, _ = http.NewRequestWithContext(ctx, method, "http://svc.test/x", nil)
				if resp, _ := tr.RoundTrip(req); resp != nil {
					resp.Body.Close()
				}
				requests, accepts := counts(tr, "svc.test")
				assert.Equal(t, tt.requests, requests-1, "attempts counted")
				assert.Equal(t, tt.accepts, accepts, "accepted attempts counted")
			})
		})
	}
}

func TestThrottleWayBackCountsRescuedRequests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// A host refused at the cap heals, but only its retries succeed:
		// its first rescued request forgets the failures.
		failing := &atomic.Bool{}
		failing.Store(true)
		base := newHostBase(func(_ string, n int) int {
			if failing.Load() || n%2 == 0 {
				return 503
			}
			return 200
		})
		tr := newTestTransport(base, 0.95, WithoutBudget(), WithAdaptiveThrottling())
		for range 100 {
			roundTrip(tr, "http://svc.test/")
		}
		p, _ := rejection(tr, "svc.test")
		require.InDelta(t, 0.9, p, 1e-9)
		failing.Store(false)
		resp, err := roundTrip(tr, "http://svc.test/")
		require.NoError(t, err)
		require.Equal(t, 200, resp.StatusCode)
		p, _ = rejection(tr, "svc.test")
		assert.Zero(t, p)
	})
}

func TestThrottleShedsNothingAtTenPercentFailures(t *testing.T) {
	// 10% of attempts fail at random, with the real random source: the
	// window never holds more failures than accepts.
	rng := rand.New(rand.NewPCG(1, 2))
	var mu sync.Mutex
	base := newHostBase(func(string, int) int {
		mu.Lock()
		defer mu.Unlock()
		if rng.Float64() < 0.1 {
			return 503
		}
		return 200
	})
	tr := New(WithBase(base), WithBackoff(backoff.Constant(0)), WithAdaptiveThrottling())
	var refused, ok atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 2500 {
				resp, err := roundTrip(tr, "http://svc.test/")
				switch {
				case errors.Is(err, ErrThrottled):
					refused.Add(1)
				case err == nil && resp.StatusCode == 200:
					ok.Add(1)
				}
			}
		})
	}
	wg.Wait()
	assert.Zero(t, refused.Load())
	assert.GreaterOrEqual(t, ok.Load(), int64(19900), "successes of 20000")
}

func TestThrottleOutageSendsFewRequests(t *testing.T) {
	// Every attempt fails; default budget and options: at most 0.30
	// attempts per request reach the host, against 1.05 without throttling.
	for _, tt := range []struct {
		name string
		opts []Option
		max  float64
	}{
		{"without throttling", nil, 1.06},
		{"with throttling", []Option{WithAdaptiveThrottling()}, 0.30},
	} {
		t.Run(tt.name, func(t *testing.T) {
			base := newHostBase(always(503))
			tr := New(append([]Option{WithBase(base), WithBackoff(backoff.Constant(0)), WithThrottleBackoff(backoff.Constant(0))}, tt.opts...)...)
			var wg sync.WaitGroup
			var next atomic.Int64
			for range 16 {
				wg.Go(func() {
					for next.Add(1) <= 2000 {
						roundTrip(tr, "http://svc.test/")
					}
				})
			}
			wg.Wait()
			ratio := float64(base.count("svc.test")) / 2000
			t.Logf("attempts per request: %.3f", ratio)
			assert.LessOrEqual(t, ratio, tt.max)
		})
	}
}

func TestThrottleIgnoresTheCallersCancellation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := newHostBase(always(503))
		tr := newTestTransport(base, 0.95, WithMaxAttempts(1), WithAdaptiveThrottling(throttle.MinRequests(1)))
		roundTrip(tr, "http://svc.test/") // the host is counted
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		canceled := rtFunc(func(r *http.Request) (*http.Response, error) { return nil, r.Context().Err() })
		tr.swapBase(canceled)
		for range 10 {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://svc.test/", nil)
			_, err := tr.RoundTrip(req)
			require.ErrorIs(t, err, context.Canceled)
		}
		p, _ := rejection(tr, "svc.test")
		assert.InDelta(t, 0.5, p, 1e-9, "only the first failure counts")
	})
}

func TestThrottleLogsRefusals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs bytes.Buffer
		logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		tr := newTestTransport(newHostBase(always(503)), 0, WithMaxAttempts(1), WithLogger(logger),
			WithAdaptiveThrottling(throttle.MinRequests(1)))
		roundTrip(tr, "http://svc.test/a?token=secret")
		logs.Reset()
		_, err := roundTrip(tr, "http://svc.test/a?token=secret")
		require.ErrorIs(t, err, ErrThrottled)
		out := logs.String()
		assert.Contains(t, out, `"msg":"retryhttp: throttled"`)
		assert.Contains(t, out, `"reason":"host is throttled"`)
		assert.Contains(t, out, `"rejection_probability":0.5`)
		assert.Contains(t, out, `"url":"http://svc.test/a"`)
		assert.NotContains(t, out, "secret")
	})
}

func TestThrottleConcurrentUse(t *testing.T) {
	// Many goroutines, hosts failing and healing, under the race detector.
	var flip atomic.Int64
	base := newHostBase(func(host string, n int) int {
		if (n/50+len(host))%2 == 0 || flip.Add(1)%7 == 0 {
			return 503
		}
		return 200
	})
	tr := New(WithBase(base), WithBackoff(backoff.Constant(0)), WithAdaptiveThrottling(throttle.MinRequests(5)))
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 500 {
				roundTrip(tr, "http://h"+strconv.Itoa((g+i)%3)+".test/")
				if i%100 == 0 {
					for range tr.Rejections() {
					}
				}
			}
		})
	}
	wg.Wait()
	for r := range tr.Rejections() {
		assert.GreaterOrEqual(t, r.Probability, 0.0)
		assert.LessOrEqual(t, r.Probability, throttling.DefaultMaxRejection)
	}
}

func TestWithAdaptiveThrottlingRejectsANilOption(t *testing.T) {
	assert.PanicsWithValue(t, "retryhttp: WithAdaptiveThrottling: nil throttle.Option",
		func() { WithAdaptiveThrottling(nil) })
}

// TestWithAdaptiveThrottlingAppliesOptions checks that each
// throttle.Option reaches the Transport, and that the defaults are those
// package throttle documents.
func TestWithAdaptiveThrottlingAppliesOptions(t *testing.T) {
	def := New(WithAdaptiveThrottling()).throttle.Config()
	assert.Equal(t, config.Throttle{Multiplier: 2, Window: 10 * time.Second, MaxRejection: 0.9, MinRequests: 20}, def)

	th := New(WithAdaptiveThrottling(throttle.Multiplier(3), throttle.Window(time.Second),
		throttle.MaxRejection(0.5), throttle.MinRequests(7))).throttle.Config()
	assert.Equal(t, config.Throttle{Multiplier: 3, Window: time.Second, MaxRejection: 0.5, MinRequests: 7}, th)
}

func TestHandlerAnswersAShedDependencyWith503(t *testing.T) {
	dep := newTestTransport(newHostBase(always(503)), 0, WithMaxAttempts(1),
		WithAdaptiveThrottling(throttle.MinRequests(1)))
	roundTrip(dep, "http://dep.test/") // the dependency is failing
	for _, tt := range []struct {
		name   string
		status int
		want   int
		signal string
	}{
		{"502 becomes 503", http.StatusBadGateway, 503, "false"},
		{"500 becomes 503", http.StatusInternalServerError, 503, "false"},
		{"429 stays", http.StatusTooManyRequests, 429, "false"},
		{"a fallback's 200 stays", http.StatusOK, 200, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := server.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				req, _ := http.NewRequestWithContext(r.Context(), http.MethodGet, "http://dep.test/", nil)
				_, err := dep.RoundTrip(req)
				require.ErrorIs(t, err, ErrThrottled)
				w.WriteHeader(tt.status)
			}))
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
			assert.Equal(t, tt.want, rec.Code)
			assert.Equal(t, tt.signal, rec.Header().Get(wire.ShouldRetryHeader))
		})
	}
}

// throttleCases are the states of a Transport with adaptive throttling in
// which a GET to a healthy host succeeds: no host counted, another host
// counted (refused requests), and the host itself counted, not refused.
func throttleCases() []struct {
	name  string
	ready func(*Transport)
} {
	fail := func(host string) func(*Transport) {
		return func(tr *Transport) {
			base := tr.base
			tr.swapBase(newHostBase(always(503)))
			for range 3 * throttling.DefaultMinRequests {
				roundTrip(tr, "http://"+host+"/")
			}
			tr.swapBase(base)
		}
	}
	return []struct {
		name  string
		ready func(*Transport)
	}{
		{"no-host-failing", func(*Transport) {}},
		{"another-host-failing", fail("down.test")},
		{"this-host-failed-once", func(tr *Transport) {
			base := tr.base
			tr.swapBase(newHostBase(always(503)))
			roundTrip(tr, "http://svc.test/")
			tr.swapBase(base)
		}},
	}
}

// BenchmarkThrottleOverhead measures what adaptive throttling adds to a
// bodiless GET that succeeds at once, over the stub, against the same GET
// without throttling ("off").
func BenchmarkThrottleOverhead(b *testing.B) {
	b.Run("off", func(b *testing.B) {
		tr := New(WithBase(newStub()))
		get, _ := http.NewRequest(http.MethodGet, "http://svc.test/items", nil)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := tr.RoundTrip(get); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, c := range throttleCases() {
		b.Run(c.name, func(b *testing.B) {
			tr := New(WithBase(newStub()), WithMaxAttempts(1), WithAdaptiveThrottling())
			c.ready(tr)
			get, _ := http.NewRequest(http.MethodGet, "http://svc.test/items", nil)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := tr.RoundTrip(get); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	// Shared through a Store that answers at once: what a request adds is
	// a look at the flag that tells the exchanges it was sent.
	b.Run("shared", func(b *testing.B) {
		nop := funcStore(func(context.Context, time.Duration, []throttle.Counts) ([]throttle.Counts, error) { return nil, nil })
		tr := New(WithBase(newStub()), WithMaxAttempts(1), WithAdaptiveThrottling(throttle.Shared(nop)))
		get, _ := http.NewRequest(http.MethodGet, "http://svc.test/items", nil)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := tr.RoundTrip(get); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestThrottledSuccessPathAllocatesNothing pins the zero-allocation promise
// of a GET that succeeds with adaptive throttling on.
func TestThrottledSuccessPathAllocatesNothing(t *testing.T) {
	for _, c := range throttleCases() {
		t.Run(c.name, func(t *testing.T) {
			tr := New(WithBase(newStub()), WithMaxAttempts(1), WithAdaptiveThrottling())
			c.ready(tr)
			get, _ := http.NewRequest(http.MethodGet, "http://svc.test/items", nil)
			allocs := testing.AllocsPerRun(1000, func() {
				if _, err := tr.RoundTrip(get); err != nil {
					t.Fatal(err)
				}
			})
			assert.Zero(t, allocs)
		})
	}
}

// TestThrottleDoesNotCountABodyGivenUpOn reads a response body that is cut
// after its headers, and cut again once resumed, past the resume limit: the
// give-up hooks see it, but adaptive throttling does not count it against
// the host: its request ended, accepted, when RoundTrip returned.
func TestThrottleDoesNotCountABodyGivenUpOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := rtFunc(func(r *http.Request) (*http.Response, error) {
			h := http.Header{"Accept-Ranges": {"bytes"}, "Etag": {`"v1"`}}
			status, part, length := 200, "part", int64(10)
			if r.Header.Get("Range") != "" {
				h.Set("Content-Range", "bytes 4-9/10")
				status, part, length = 206, "ab", 6
			}
			body := io.NopCloser(io.MultiReader(strings.NewReader(part), iotest.ErrReader(io.ErrUnexpectedEOF)))
			return &http.Response{StatusCode: status, ContentLength: length, Header: h, Body: body, Request: r}, nil
		})
		var gaveUp []GiveUpEvent
		tr := newTestTransport(base, 0.5, WithAdaptiveThrottling(throttle.MinRequests(1)), WithResume(resume.Limit(1)), WithBackoff(backoff.Constant(0)),
			WithOnGiveUp(func(e GiveUpEvent) { gaveUp = append(gaveUp, e) }))
		req, err := http.NewRequest(http.MethodGet, "http://svc.test/", nil)
		require.NoError(t, err)
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		got, err := io.ReadAll(resp.Body)
		assert.Equal(t, "partab", string(got))
		require.ErrorIs(t, err, io.ErrUnexpectedEOF)
		resp.Body.Close()

		require.Len(t, gaveUp, 1)
		assert.True(t, gaveUp[0].Resume)
		n, acc := counts(tr, "svc.test")
		assert.Equal(t, [2]int64{0, 0}, [2]int64{n, acc}, "a host that answered is not counted, whatever became of its body")
	})
}

// TestThrottleDoesNotCountARequestNeverSent gives up on requests whose
// first attempt is not sent, too little time being left for it: adaptive
// throttling counts none of them against the host, which did nothing.
func TestThrottleDoesNotCountARequestNeverSent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := rtFunc(func(r *http.Request) (*http.Response, error) {
			t.Error("an attempt was sent")
			return nil, errors.New("sent")
		})
		tr := newTestTransport(base, 0.5, WithAdaptiveThrottling(throttle.MinRequests(1)), WithDeadlineHeader(deadline.GRPCTimeout))
		for range 10 {
			ctx, cancel := context.WithTimeout(t.Context(), 500*time.Microsecond)
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://svc.test/", nil)
			require.NoError(t, err)
			_, err = tr.RoundTrip(req)
			require.ErrorIs(t, err, ErrNoTimeLeft)
			cancel()
		}
		n, acc := counts(tr, "svc.test")
		assert.Equal(t, [2]int64{0, 0}, [2]int64{n, acc}, "requests never sent are not counted")
	})
}

func TestThrottleRefusesARetryAsARequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// The host is refused with 0.9 and the random draw refuses
		// everything: a probe is sent, fails, and its retry is refused; the
		// caller gets the probe's 503.
		base := newHostBase(always(503))
		var gaveUp []GiveUpEvent
		tr := newTestTransport(base, 0.95, WithoutBudget(), WithAdaptiveThrottling(),
			WithOnGiveUp(func(e GiveUpEvent) { gaveUp = append(gaveUp, e) }))
		for range 10 {
			roundTrip(tr, "http://svc.test/")
		}
		require.Equal(t, 30, base.count("svc.test"))
		tr.rand = func() float64 { return 0 }
		for range 4 {
			_, err := roundTrip(tr, "http://svc.test/")
			require.ErrorIs(t, err, ErrThrottled)
		}
		time.Sleep(time.Second)
		gaveUp = nil
		resp, err := roundTrip(tr, "http://svc.test/")
		require.NoError(t, err)
		assert.Equal(t, 503, resp.StatusCode)
		assert.Equal(t, 31, base.count("svc.test"), "one attempt")
		require.Len(t, gaveUp, 1)
		assert.Equal(t, GiveUpThrottled, gaveUp[0].Reason)
		assert.Equal(t, 1, gaveUp[0].Attempt)
	})
}
