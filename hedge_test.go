package retryhttp

import (
	"context"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/retryhttp/retryhttp/budget"
	"github.com/retryhttp/retryhttp/classify"
	"github.com/retryhttp/retryhttp/hedge"
	"github.com/retryhttp/retryhttp/internal/attempt"
	"github.com/retryhttp/retryhttp/internal/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp/internal/latency"
)

// slowBase answers each attempt after the delay its function gives for the
// attempt's number (1, 2, ...), with the status it gives, unless the
// attempt's context ends first. It records each attempt's body and closes
// it, and counts response body closes.
type slowBase struct {
	answer func(n int) (time.Duration, int)

	mu        sync.Mutex
	n         int
	bodies    []string
	cancelled int
	responses []*countingBody
}

func (b *slowBase) RoundTrip(r *http.Request) (*http.Response, error) {
	b.mu.Lock()
	b.n++
	n := b.n
	b.mu.Unlock()
	var body []byte
	if r.Body != nil {
		body, _ = io.ReadAll(r.Body)
		r.Body.Close()
	}
	d, status := b.answer(n)
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-r.Context().Done():
		b.mu.Lock()
		b.cancelled++
		b.mu.Unlock()
		return nil, r.Context().Err()
	}
	rb := newCountingBody("attempt " + string(rune('0'+n)))
	b.mu.Lock()
	b.bodies = append(b.bodies, string(body))
	b.responses = append(b.responses, rb)
	b.mu.Unlock()
	return &http.Response{StatusCode: status, Header: http.Header{}, Body: rb, Request: r}, nil
}

func (b *slowBase) calls() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.n
}

// hedgeEvents records the hedges a Transport sends.
type hedgeEvents struct {
	mu     sync.Mutex
	events []HedgeEvent
}

func (h *hedgeEvents) option() Option {
	return WithOnHedge(func(e HedgeEvent) {
		h.mu.Lock()
		h.events = append(h.events, e)
		h.mu.Unlock()
	})
}

func (h *hedgeEvents) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.events)
}

func TestHedge(t *testing.T) {
	const delay = 10 * time.Millisecond
	tests := []struct {
		name     string
		answer   func(n int) (time.Duration, int)
		attempts int // base calls
		status   int
		elapsed  time.Duration
		winner   int // the attempt that won
		sent     int // Attempts(resp)
		hedges   int
	}{
		{"fast: no hedge", func(int) (time.Duration, int) { return 5 * time.Millisecond, 200 },
			1, 200, 5 * time.Millisecond, 1, 1, 0},
		{"slow first, hedge wins", func(n int) (time.Duration, int) {
			if n == 1 {
				return time.Second, 200
			}
			return 2 * time.Millisecond, 200
		}, 2, 200, delay + 2*time.Millisecond, 2, 2, 1},
		{"two slow, the second hedge wins", func(n int) (time.Duration, int) {
			if n < 3 {
				return time.Second, 200
			}
			return 2 * time.Millisecond, 200
		}, 3, 200, 2*delay + 2*time.Millisecond, 3, 3, 2},
		{"the first hedge answers a 503, the second wins", func(n int) (time.Duration, int) {
			switch n {
			case 1:
				return time.Second, 200
			case 2:
				return time.Millisecond, 503
			}
			return 2 * time.Millisecond, 200
		}, 3, 200, 2*delay + 2*time.Millisecond, 3, 3, 2},
		{"hedge slower, first wins", func(n int) (time.Duration, int) {
			if n == 1 {
				return 15 * time.Millisecond, 200
			}
			return time.Second, 200
		}, 2, 200, 15 * time.Millisecond, 1, 2, 1},
		{"a 503 does not win while the other is in flight", func(n int) (time.Duration, int) {
			if n == 1 {
				return 12 * time.Millisecond, 503
			}
			return 20 * time.Millisecond, 200
		}, 2, 200, delay + 20*time.Millisecond, 2, 2, 1},
		{"a 404 is final and wins", func(n int) (time.Duration, int) {
			if n == 1 {
				return 12 * time.Millisecond, 404
			}
			return time.Second, 200
		}, 2, 404, 12 * time.Millisecond, 1, 2, 1},
		{"both fail: the retries go on", func(n int) (time.Duration, int) {
			if n <= 2 {
				return 15 * time.Millisecond, 503
			}
			return time.Millisecond, 200
		}, 3, 200, 0, 3, 3, 1},
		{"an outage: a fast 503 is retried, never hedged", func(int) (time.Duration, int) { return time.Millisecond, 503 },
			3, 503, 0, 3, 3, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				base := &slowBase{answer: tt.answer}
				var hedges hedgeEvents
				tr := newTestTransport(base, 0, WithHedging(hedge.Delay(delay)), hedges.option())
				start := time.Now()
				resp, err := tr.RoundTrip(get(t, "http://svc.test/"))
				require.NoError(t, err)
				if tt.elapsed > 0 {
					assert.Equal(t, tt.elapsed, time.Since(start))
				}
				assert.Equal(t, tt.status, resp.StatusCode)
				assert.Equal(t, tt.attempts, base.calls())
				assert.Equal(t, tt.winner, attempt.Number(resp.Request.Context()), "the winner")
				assert.Equal(t, tt.sent, Attempts(resp))
				assert.Equal(t, tt.hedges, hedges.count())
				b, _ := io.ReadAll(resp.Body)
				assert.Equal(t, "attempt "+string(rune('0'+tt.winner)), string(b))
				resp.Body.Close()
				base.mu.Lock()
				for _, rb := range base.responses {
					assert.EqualValues(t, 1, rb.closes.Load(), "every response body closed once")
				}
				base.mu.Unlock()
			})
		})
	}
}

// TestHedgeOnlyWhatMaySendTwice checks which requests are hedged: never a
// key-less POST, nor a body without GetBody, nor a call under NoHedge or
// allowed one attempt.
func TestHedgeOnlyWhatMaySendTwice(t *testing.T) {
	slowFirst := func(n int) (time.Duration, int) {
		if n == 1 {
			return 50 * time.Millisecond, 200
		}
		return time.Millisecond, 200
	}
	tests := []struct {
		name   string
		req    func(t *testing.T) *http.Request
		opts   []Option
		hedged bool
	}{
		{"GET", func(t *testing.T) *http.Request { return get(t, "http://svc.test/") }, nil, true},
		{"GET under NoHedge", func(t *testing.T) *http.Request {
			return get(t, "http://svc.test/").WithContext(NoHedge(t.Context()))
		}, nil, false},
		{"GET allowed one attempt", func(t *testing.T) *http.Request {
			return get(t, "http://svc.test/").WithContext(MaxAttempts(t.Context(), 1))
		}, nil, false},
		{"key-less POST", func(t *testing.T) *http.Request {
			r, _ := withBody(t, t.Context(), http.MethodPost, "http://svc.test/", "pay", true)
			return r
		}, nil, false},
		{"POST with a key and GetBody", func(t *testing.T) *http.Request {
			r, _ := withBody(t, t.Context(), http.MethodPost, "http://svc.test/", "pay", true)
			r.Header.Set("Idempotency-Key", "k")
			return r
		}, nil, true},
		{"POST declared resendable", func(t *testing.T) *http.Request {
			r, _ := withBody(t, Resendable(t.Context()), http.MethodPost, "http://svc.test/", "query", true)
			return r
		}, nil, true},
		{"PUT without GetBody", func(t *testing.T) *http.Request {
			r, _ := withBody(t, t.Context(), http.MethodPut, "http://svc.test/", "v", false)
			return r
		}, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				base := &slowBase{answer: slowFirst}
				tr := newTestTransport(base, 0, append([]Option{WithHedging(hedge.Delay(10 * time.Millisecond))}, tt.opts...)...)
				resp, err := tr.RoundTrip(tt.req(t))
				require.NoError(t, err)
				resp.Body.Close()
				if !tt.hedged {
					assert.Equal(t, 1, base.calls())
					return
				}
				assert.Equal(t, 2, base.calls())
				base.mu.Lock()
				defer base.mu.Unlock()
				for _, b := range base.bodies {
					assert.Equal(t, base.bodies[0], b, "the hedge carries its own copy of the body")
				}
			})
		})
	}
}

// TestHedgePaidFromBudget checks that a hedge is paid as a retry is, and
// that an empty budget sends none without failing the request.
func TestHedgePaidFromBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bucket := budget.NewBucket(budget.Capacity(5), budget.TimeoutCost(5))
		base := &slowBase{answer: func(n int) (time.Duration, int) {
			if n%2 == 1 {
				return 50 * time.Millisecond, 200
			}
			return time.Millisecond, 200
		}}
		tr := newTestTransport(base, 0, WithHedging(hedge.Delay(10*time.Millisecond)), WithBudget(bucket))
		resp, err := tr.RoundTrip(get(t, "http://svc.test/"))
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, 2, base.calls(), "hedged")
		assert.Equal(t, 5*budget.Token, bucket.Balance(), "the winning hedge's cost went back")

		bucket.Withdraw(nil, classify.Verdict{Decision: classify.Retry}) // empty it
		start := time.Now()
		resp, err = tr.RoundTrip(get(t, "http://svc.test/"))
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, 3, base.calls(), "no hedge from an empty budget")
		assert.Equal(t, 50*time.Millisecond, time.Since(start))
	})
}

// TestHedgeCap checks that when a server is slow for every request, a
// fixed delay still hedges at most the cap's fraction of requests.
func TestHedgeCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := &slowBase{answer: func(int) (time.Duration, int) { return 30 * time.Millisecond, 200 }}
		var hedges hedgeEvents
		tr := newTestTransport(base, 0, WithHedging(hedge.Delay(10*time.Millisecond)), WithoutBudget(), hedges.option())
		const n = 2000
		for range n {
			resp, err := tr.RoundTrip(get(t, "http://svc.test/"))
			require.NoError(t, err)
			resp.Body.Close()
		}
		assert.LessOrEqual(t, hedges.count(), n*5/100+latency.HedgeBurst, "hedges")
		assert.Greater(t, hedges.count(), n*4/100, "hedges up to the cap")
	})
}

// TestHedgeQuantile checks the adaptive delay: no hedge before enough
// latencies are known, then a hedge after the 95th percentile of the
// host's latency, and none for a host slow for every request.
func TestHedgeQuantile(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var slow atomic.Bool
		var hedges hedgeEvents
		base := &slowBase{answer: func(n int) (time.Duration, int) {
			if slow.Load() {
				slow.Store(false)
				return time.Second, 200
			}
			return 2 * time.Millisecond, 200
		}}
		tr := newTestTransport(base, 0, WithHedging(), WithoutBudget(), hedges.option())
		do := func() time.Duration {
			start := time.Now()
			resp, err := tr.RoundTrip(get(t, "http://svc.test/"))
			require.NoError(t, err)
			resp.Body.Close()
			return time.Since(start)
		}
		slow.Store(true)
		assert.Equal(t, time.Second, do(), "no hedge before 100 latencies are known")
		for range 200 {
			do()
		}
		slow.Store(true)
		took := do()
		require.Equal(t, 1, hedges.count())
		// 2 ms falls in the bucket [1.92 ms, 2.048 ms): the hedge goes at
		// 2.048 ms, and answers 2 ms later.
		assert.Equal(t, hedges.events[0].Delay+2*time.Millisecond, took)
		assert.Less(t, took, 5*time.Millisecond)
	})
}

// TestHedgeCancelledCaller checks that a caller who gives up ends every
// attempt.
func TestHedgeCancelledCaller(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := &slowBase{answer: func(int) (time.Duration, int) { return time.Hour, 200 }}
		tr := newTestTransport(base, 0, WithHedging(hedge.Delay(10*time.Millisecond)))
		ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
		defer cancel()
		_, err := tr.RoundTrip(get(t, "http://svc.test/").WithContext(ctx))
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, 3, base.calls(), "the first attempt and a hedge at 10 ms and 20 ms")
		assert.Equal(t, 3, base.cancelled)
	})
}

func TestWithHedgingRejectsBadOptions(t *testing.T) {
	assert.PanicsWithValue(t, "retryhttp: WithHedging: nil hedge.Option", func() { WithHedging(nil) })
	assert.PanicsWithValue(t, "retryhttp: WithOnHedge: nil function", func() { WithOnHedge(nil) })
}

// TestWithHedgingAppliesOptions checks that each hedge.Option reaches the
// Transport, and that the defaults are those package hedge documents.
func TestWithHedgingAppliesOptions(t *testing.T) {
	def := New(WithHedging()).hedge
	assert.Equal(t, time.Duration(0), def.Config().Delay)
	assert.Equal(t, 0.95, def.Config().Quantile)
	assert.Equal(t, time.Millisecond, def.Config().MinDelay)
	assert.Equal(t, 100, def.Config().MinSamples)
	assert.Equal(t, 1000, def.Config().Samples)
	assert.Equal(t, latency.HedgeEarning(0.05), def.Earning())

	h := New(WithHedging(hedge.Delay(time.Second), hedge.Quantile(0.5), hedge.MinDelay(0),
		hedge.MinSamples(7), hedge.MaxFraction(1), hedge.Samples(2))).hedge
	assert.Equal(t, time.Second, h.Config().Delay)
	assert.Equal(t, 0.5, h.Config().Quantile)
	assert.Equal(t, time.Duration(0), h.Config().MinDelay)
	assert.Equal(t, 7, h.Config().MinSamples)
	assert.Equal(t, 2, h.Config().Samples)
	assert.Equal(t, int64(latency.HedgeUnit), h.Earning())
}

// TestHedgePause checks that when every request in flight passes the delay
// at once, only a few are hedged, and the host's saved hedges are left for
// a slow request after the pause.
func TestHedgePause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var pause atomic.Bool
		pause.Store(true)
		base := &slowBase{answer: func(n int) (time.Duration, int) {
			if pause.Load() {
				return 50 * time.Millisecond, 200 // everyone, and every hedge
			}
			return time.Second, 200
		}}
		var hedges hedgeEvents
		tr := newTestTransport(base, 0, WithHedging(hedge.Delay(10*time.Millisecond)), WithoutBudget(), hedges.option())
		do := func() {
			resp, err := tr.RoundTrip(get(t, "http://svc.test/"))
			require.NoError(t, err)
			resp.Body.Close()
		}
		var wg sync.WaitGroup
		for range 16 {
			wg.Go(do)
		}
		wg.Wait()
		assert.Equal(t, latency.PauseBurst, hedges.count(), "16 requests paused together")

		// Slow requests, one at a time, each with an answer to its hedge:
		// the saved hedges are there for them.
		pause.Store(false)
		offset := base.calls()
		base.answer = func(n int) (time.Duration, int) {
			if (n-offset)%2 == 1 {
				return time.Second, 200
			}
			return time.Millisecond, 200
		}
		before := hedges.count()
		for range 3 {
			start := time.Now()
			do()
			assert.Equal(t, 11*time.Millisecond, time.Since(start))
		}
		assert.Equal(t, before+3, hedges.count())
	})
}

// TestHedgeScarce checks that when a host has few hedges left, they go to
// the requests still waiting one delay after the hedge delay, not to the
// first to pass it.
func TestHedgeScarce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var first time.Duration
		base := &slowBase{answer: func(n int) (time.Duration, int) {
			if n == 1 {
				return first, 200
			}
			return time.Millisecond, 200
		}}
		var hedges hedgeEvents
		tr := newTestTransport(base, 0, WithHedging(hedge.Delay(10*time.Millisecond)), WithoutBudget(), hedges.option())
		hl := tr.hedge.Table().Host(wire.RequestKey(get(t, "http://svc.test/")))
		do := func() time.Duration {
			base.mu.Lock()
			base.n = 0
			base.mu.Unlock()
			start := time.Now()
			resp, err := tr.RoundTrip(get(t, "http://svc.test/"))
			require.NoError(t, err)
			resp.Body.Close()
			return time.Since(start)
		}

		hl.SetCredit(latency.HedgeBurst * latency.HedgeUnit / 2) // half left: not scarce
		first = 15 * time.Millisecond
		assert.Equal(t, 11*time.Millisecond, do(), "hedged at the delay")
		assert.Equal(t, 1, hedges.count())

		hl.SetCredit(2 * latency.HedgeUnit)
		assert.Equal(t, 15*time.Millisecond, do(), "a little late: answered before a second delay")
		assert.Equal(t, 1, hedges.count(), "no hedge spent on it")
		first = time.Second
		assert.Equal(t, 21*time.Millisecond, do(), "still waiting a delay later: hedged")
		assert.Equal(t, 2, hedges.count())
	})
}

// TestWithHedgingSharedOption checks that two Transports made with one
// WithHedging Option keep their own latencies and hedge credit.
func TestWithHedgingSharedOption(t *testing.T) {
	opt := WithHedging()
	a, b := New(opt), New(opt)
	assert.NotSame(t, a.hedge, b.hedge)
	assert.NotSame(t, a.hedge.Table(), b.hedge.Table())
}
