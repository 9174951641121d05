package retryhttp

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/retryhttp/retryhttp/budget"
	"github.com/retryhttp/retryhttp/classify"
	"github.com/retryhttp/retryhttp/deadline"
	"github.com/retryhttp/retryhttp/hedge"
	"github.com/retryhttp/retryhttp/internal/deadlines"
	"github.com/retryhttp/retryhttp/internal/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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
		assert.InDelta(t, 5*time.Millisecond, tr.typicalAnswer(req), float64(5*time.Millisecond)/8)
		latency.Store(int64(40 * time.Millisecond))
		warm(t, tr, 2*deadlines.Window)
		assert.InDelta(t, 40*time.Millisecond, tr.typicalAnswer(req), float64(40*time.Millisecond)/8)
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
	for range 10 {
		_, err := tr.RoundTrip(get(t, "http://a.test/"))
		require.NoError(t, err)
	}
	assert.Zero(t, tr.answers.Len(), "no host timed without a deadline")
	_, err := tr.RoundTrip(withDeadline(t, "http://b.test/", time.Minute))
	require.NoError(t, err)
	require.Equal(t, 1, tr.answers.Len())
	assert.NotNil(t, tr.answers.Lookup(wire.HostKey{Scheme: "http", Host: "b.test"}))
	assert.Nil(t, New(WithHedging()).answers, "hedging keeps answer times")
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
			tr.noFitCheck = !check
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
