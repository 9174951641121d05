package retryhttp_test

import (
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/hedge"
	"github.com/retryhttp/retryhttp/retryhttptest"
)

// driven is what the callers of a run got.
type driven struct {
	n, ok, refused int
}

func (d driven) success() float64 { return float64(d.ok) / float64(d.n) }

// drive sends n requests made by newReq, c at a time, through rt, and
// counts the 2xx responses and the refusals of adaptive throttling.
func drive(t *testing.T, rt http.RoundTripper, n, c int, newReq func(i int) *http.Request) driven {
	t.Helper()
	var ok, refused atomic.Int64
	var next atomic.Int64
	var wg sync.WaitGroup
	for range c {
		wg.Go(func() {
			for i := int(next.Add(1)); i <= n; i = int(next.Add(1)) {
				resp, err := rt.RoundTrip(newReq(i))
				switch {
				case errors.Is(err, retryhttp.ErrThrottled):
					refused.Add(1)
				case err == nil:
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode < 300 {
						ok.Add(1)
					}
				}
			}
		})
	}
	wg.Wait()
	return driven{n: n, ok: int(ok.Load()), refused: int(refused.Load())}
}

// rescueShape is a host whose requests all end in success, some only
// after a retry: adaptive throttling must refuse none of them.
type rescueShape struct {
	name   string
	fault  retryhttptest.Fault
	newReq func(url string, i int) *http.Request
	n, c   int
	opts   []retryhttp.Option
}

func getItem(url string, i int) *http.Request {
	req, _ := http.NewRequest(http.MethodGet, url+"/items/"+strconv.Itoa(i), nil)
	return req
}

func keyedPost(url string, i int) *http.Request {
	req, _ := http.NewRequest(http.MethodPost, url+"/orders", strings.NewReader(`{"item":1}`))
	req.Header.Set("Idempotency-Key", "order-"+strconv.Itoa(i))
	return req
}

func rescueShapes() []rescueShape {
	return []rescueShape{
		{
			name:   "every GET's first attempt reset after the request was read",
			fault:  retryhttptest.First(1, retryhttptest.ResetAfterRead()),
			newReq: getItem, n: 2000, c: 16,
		},
		{
			// Two retries of 5 tokens, one refunded: the default budget
			// pays for about 60 such requests 16 at a time.
			name:   "keyed POSTs answered 503, 503, 200",
			fault:  retryhttptest.First(2, retryhttptest.Status(http.StatusServiceUnavailable)),
			newReq: keyedPost, n: 60, c: 16,
		},
		{
			name:   "keyed POSTs answered 503, 503, 200, without a budget",
			fault:  retryhttptest.First(2, retryhttptest.Status(http.StatusServiceUnavailable)),
			newReq: keyedPost, n: 2000, c: 16, opts: []retryhttp.Option{retryhttp.WithoutBudget()},
		},
		{
			name:   "429 with Retry-After: 1, then 200",
			fault:  retryhttptest.First(1, retryhttptest.RetryAfter(http.StatusTooManyRequests, time.Second)),
			newReq: getItem, n: 2000, c: 64,
		},
		{
			// The first attempt answers 503 after 50 ms; the hedge sent
			// after 5 ms answers 200 and wins.
			name:   "a hedge wins over a first attempt that fails late",
			fault:  retryhttptest.First(1, retryhttptest.Delay(50*time.Millisecond, retryhttptest.Status(http.StatusServiceUnavailable))),
			newReq: getItem, n: 2000, c: 16,
			opts: []retryhttp.Option{retryhttp.WithHedging(hedge.Delay(5*time.Millisecond), hedge.MaxFraction(1))},
		},
	}
}

// TestThrottleRefusesNoRescuedRequest runs each shape in memory, in a
// synctest bubble, through the same Transport with and without adaptive
// throttling: with it, as without, every request succeeds and none is
// refused, since no request ends in failure.
func TestThrottleRefusesNoRescuedRequest(t *testing.T) {
	for _, s := range rescueShapes() {
		t.Run(s.name, func(t *testing.T) {
			var got [2]driven
			for i, throttle := range []bool{false, true} {
				synctest.Test(t, func(t *testing.T) {
					base := retryhttptest.NewTransport(nil, s.fault)
					opts := append([]retryhttp.Option{retryhttp.WithBase(base)}, s.opts...)
					if throttle {
						opts = append(opts, retryhttp.WithAdaptiveThrottling())
					}
					tr := retryhttp.New(opts...)
					got[i] = drive(t, tr, s.n, s.c, func(i int) *http.Request { return s.newReq("http://svc.test", i) })
					for r := range tr.Rejections() {
						assert.Zero(t, r.Probability, "host %s", r.Host)
					}
				})
			}
			t.Logf("success without throttling %.2f%%, with it %.2f%% (%d refused)",
				100*got[0].success(), 100*got[1].success(), got[1].refused)
			assert.Equal(t, s.n, got[0].ok, "successes without throttling")
			assert.Zero(t, got[1].refused, "requests refused")
			assert.GreaterOrEqual(t, got[1].success(), 0.99, "success with throttling")
		})
	}
}

// TestThrottleRefusesNoRescuedRequestLoopback is the reset shape over real
// connections: a loopback server reads each GET's first attempt and resets
// the connection, and answers every retry. Each attempt has a connection
// of its own, so that every reset reaches the Transport: net/http resends
// a GET by itself after a reset on a connection it reused.
func TestThrottleRefusesNoRescuedRequestLoopback(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	srv := retryhttptest.NewServer(nil, retryhttptest.First(1, retryhttptest.ResetAfterRead()))
	defer srv.Close()
	var got [2]driven
	for i, throttle := range []bool{false, true} {
		base := &http.Transport{DisableKeepAlives: true}
		opts := []retryhttp.Option{retryhttp.WithBase(base)}
		if throttle {
			opts = append(opts, retryhttp.WithAdaptiveThrottling())
		}
		// Distinct paths per run: the server counts attempts by target.
		prefix := srv.URL + "/run" + strconv.Itoa(i)
		got[i] = drive(t, retryhttp.New(opts...), 400, 16, func(i int) *http.Request { return getItem(prefix, i) })
	}
	assert.Equal(t, 2*2*400, srv.Attempts(), "attempts of both runs")
	t.Logf("success without throttling %.2f%%, with it %.2f%% (%d refused)",
		100*got[0].success(), 100*got[1].success(), got[1].refused)
	assert.Equal(t, 400, got[0].ok, "successes without throttling")
	assert.Zero(t, got[1].refused, "requests refused")
	assert.GreaterOrEqual(t, got[1].success(), 0.99, "success with throttling")
}

// TestThrottleStillRefusesAnOutage is the outage beside the rescued
// shapes: a host that fails every attempt, whether at once, after asking
// for a wait, by resetting the connection or by hanging, is refused most
// requests, and sees at most 0.30 attempts per request. Its requests are
// counted as they end, retries included; once the budget is spent they end
// after one attempt.
func TestThrottleStillRefusesAnOutage(t *testing.T) {
	for _, tt := range []struct {
		name  string
		fault retryhttptest.Fault
		opts  []retryhttp.Option
	}{
		{"503", retryhttptest.Status(http.StatusServiceUnavailable), nil},
		{"503 with Retry-After: 1", retryhttptest.RetryAfter(http.StatusServiceUnavailable, time.Second), nil},
		{"reset after the request was read", retryhttptest.ResetAfterRead(), nil},
		{"hang, cut after 50 ms", retryhttptest.Hang(), []retryhttp.Option{retryhttp.WithAttemptTimeout(50 * time.Millisecond)}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				base := retryhttptest.NewTransport(nil, tt.fault)
				tr := retryhttp.New(append([]retryhttp.Option{retryhttp.WithBase(base), retryhttp.WithAdaptiveThrottling()}, tt.opts...)...)
				const n = 2000
				got := drive(t, tr, n, 16, func(i int) *http.Request { return getItem("http://svc.test", i) })
				perRequest := float64(base.Attempts()) / n
				t.Logf("attempts per request %.3f, %d refused", perRequest, got.refused)
				assert.Zero(t, got.ok)
				assert.Greater(t, got.refused, n/2, "requests refused")
				assert.LessOrEqual(t, perRequest, 0.30, "attempts per request")
				p, counted := 0.0, false
				for r := range tr.Rejections() {
					p, counted = r.Probability, true
				}
				require.True(t, counted, "the host is counted")
				assert.InDelta(t, 0.9, p, 1e-9, "the highest rejection probability by default")
			})
		})
	}
}
