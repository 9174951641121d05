package retryhttp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/backoff"
	"github.com/retryhttp/retryhttp/deadline"
	"github.com/retryhttp/retryhttp/hedge"
	"github.com/retryhttp/retryhttp/resume"
	"github.com/retryhttp/retryhttp/retryhttptest"
	"github.com/retryhttp/retryhttp/throttle"
)

// The tests in this file count the requests a server received, a loopback
// one or, where timing matters, an in-memory one in a synctest bubble, and
// compare them with what retryhttp reports: Attempts, the hooks, the logs.

// counting is a handler that counts the requests it gets, keeps the header
// of the last, and answers each with status.
type counting struct {
	status   int
	requests atomic.Int32
	mu       sync.Mutex
	header   http.Header
}

func newCounting(status int) (*counting, *httptest.Server) {
	c := &counting{status: status}
	return c, httptest.NewServer(c)
}

func (c *counting) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.requests.Add(1)
	c.mu.Lock()
	c.header = r.Header.Clone()
	c.mu.Unlock()
	io.Copy(io.Discard, r.Body)
	w.WriteHeader(c.status)
}

func (c *counting) received() int { return int(c.requests.Load()) }

func (c *counting) lastHeader() http.Header {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.header
}

// fast are the options that pace retries by nothing, so that the tests
// count requests, not time.
var fast = []retryhttp.Option{retryhttp.WithBackoff(backoff.Constant(0)), retryhttp.WithoutBudget()}

// wrapper is a RoundTripper over another that unwraps to it, as an
// instrumenting one (otelretry's) does.
type wrapper struct{ http.RoundTripper }

func (w wrapper) Unwrap() http.RoundTripper { return w.RoundTripper }

// TestStackedTransports checks that a Transport cannot be the base of
// another, directly or under wrappers that unwrap to it, and that a GET to
// a server answering 503 through one Transport over wrappers reaches it as
// many times as the Transport's attempts, which Attempts reports. Two
// Transports of 3 attempts stacked sent it 9 times.
func TestStackedTransports(t *testing.T) {
	const panics = "retryhttp: WithBase: the base is a retryhttp Transport, directly or through Unwrap: its retries would multiply this one's"
	for name, base := range map[string]http.RoundTripper{
		"directly":               retryhttp.New(),
		"a zero Transport":       &retryhttp.Transport{},
		"through Unwrap":         wrapper{retryhttp.New()},
		"through Unwrap, twice":  wrapper{wrapper{retryhttp.New(retryhttp.WithMaxAttempts(2))}},
		"under a Transport base": wrapper{retryhttp.New(retryhttp.WithBase(wrapper{http.DefaultTransport}))},
	} {
		assert.PanicsWithValue(t, panics, func() { retryhttp.New(retryhttp.WithBase(base)) }, name)
	}

	c, srv := newCounting(http.StatusServiceUnavailable)
	defer srv.Close()
	tr := retryhttp.New(append([]retryhttp.Option{retryhttp.WithBase(wrapper{wrapper{srv.Client().Transport}})}, fast...)...)
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Get(srv.URL)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Equal(t, 3, c.received(), "requests the server received: the attempts of one Transport")
	assert.Equal(t, c.received(), retryhttp.Attempts(resp))
}

// TestFeatureOptionsGivenTwiceOverTheWire checks, by what reaches a server,
// that a feature's options given in two calls add up, the later call
// overriding only the fields it sets, in either order.
func TestFeatureOptionsGivenTwiceOverTheWire(t *testing.T) {
	t.Run("resume limit, then stall timeout", func(t *testing.T) {
		for name, opts := range map[string][]retryhttp.Option{
			"limit first": {retryhttp.WithResume(resume.Limit(2)), retryhttp.WithResume(resume.StallTimeout(time.Minute))},
			"limit last":  {retryhttp.WithResume(resume.StallTimeout(time.Minute)), retryhttp.WithResume(resume.Limit(2))},
		} {
			f := newFile(version{body: eightMiB, etag: `"v1"`})
			srv := retryhttptest.NewServer(f, retryhttptest.CloseAfter(1<<20))
			tr := newResumingTransport(srv.Client().Transport, opts...)
			resp, err := (&http.Client{Transport: tr}).Get(srv.URL)
			require.NoError(t, err)
			_, err = io.ReadAll(resp.Body)
			resp.Body.Close()
			var rerr *resume.Error
			require.ErrorAs(t, err, &rerr, name)
			assert.Equal(t, retryhttp.GiveUpResumeLimit, rerr.GiveUp, name)
			// The default limit, 10, would have sent 11.
			assert.Equal(t, 3, srv.Attempts(), "%s: requests the server received", name)
			assert.Equal(t, srv.Attempts(), retryhttp.Attempts(resp)+rerr.Resumes, "%s: Attempts and the resumes", name)
			tr.CloseIdleConnections()
			srv.Close()
		}
	})
	t.Run("stall timeout, then limit", func(t *testing.T) {
		// The case that put the stall timeout back to 10 s: the stall is
		// resumed after 2 s, on synctest's clock.
		synctest.Test(t, func(t *testing.T) {
			base := retryhttptest.NewTransport(newFile(version{body: oneMiB, etag: `"v1"`}), retryhttptest.Sequence(retryhttptest.StallAfter(1000)))
			var at time.Duration
			start := time.Now()
			tr := retryhttp.New(append([]retryhttp.Option{retryhttp.WithBase(base),
				retryhttp.WithResume(resume.StallTimeout(2 * time.Second)), retryhttp.WithResume(resume.Limit(1)),
				retryhttp.WithOnRetry(func(retryhttp.RetryEvent) { at = time.Since(start) })}, fast...)...)
			resp := fetch(t, t.Context(), tr, "http://files.test/")
			got, err := readBody(resp)
			require.NoError(t, err)
			requireSame(t, oneMiB, got)
			assert.GreaterOrEqual(t, at, 2*time.Second)
			assert.Less(t, at, 3*time.Second, "resumed after the stall timeout given, not the default 10 s")
			assert.Equal(t, 2, base.Attempts(), "requests the server received")
			assert.Equal(t, base.Attempts(), retryhttp.Attempts(resp)+1, "Attempts and the resume")
		})
	})
	t.Run("hedging", func(t *testing.T) {
		// The fixed delay of the first call hedges a slow first attempt;
		// without it, the adaptive delay waits for 100 samples first.
		synctest.Test(t, func(t *testing.T) {
			base := retryhttptest.NewTransport(nil, retryhttptest.First(1, retryhttptest.Delay(time.Second, retryhttptest.Pass())))
			var hedges int
			tr := retryhttp.New(retryhttp.WithBase(base), retryhttp.WithMaxAttempts(2),
				retryhttp.WithHedging(hedge.Delay(20*time.Millisecond)), retryhttp.WithHedging(hedge.MaxFraction(0.5)),
				retryhttp.WithOnHedge(func(retryhttp.HedgeEvent) { hedges++ }))
			start := time.Now()
			resp := fetch(t, t.Context(), tr, "http://svc.test/")
			_, err := readBody(resp)
			require.NoError(t, err)
			assert.Equal(t, 20*time.Millisecond, time.Since(start), "the hedge's answer")
			assert.Equal(t, 1, hedges)
			synctest.Wait()
			assert.Equal(t, 2, base.Attempts(), "requests the server received")
			assert.Equal(t, base.Attempts(), retryhttp.Attempts(resp))
		})
	})
	t.Run("adaptive throttling", func(t *testing.T) {
		// Four failures: 4/5 is refused once MinRequests are in, at most
		// MaxRejection: 0.5 with the first call's (0.8 with the default
		// 0.9; nothing before the default 20 requests).
		c, srv := newCounting(http.StatusServiceUnavailable)
		defer srv.Close()
		tr := retryhttp.New(retryhttp.WithBase(srv.Client().Transport), retryhttp.WithMaxAttempts(1),
			retryhttp.WithAdaptiveThrottling(throttle.MaxRejection(0.5)), retryhttp.WithAdaptiveThrottling(throttle.MinRequests(4)))
		defer tr.CloseIdleConnections()
		for range 4 {
			resp, err := (&http.Client{Transport: tr}).Get(srv.URL)
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, 1, retryhttp.Attempts(resp))
		}
		assert.Equal(t, 4, c.received(), "requests the server received")
		var rejections []throttle.Rejection
		for r := range tr.Rejections() {
			rejections = append(rejections, r)
		}
		require.Len(t, rejections, 1)
		assert.InDelta(t, 0.5, rejections[0].Probability, 1e-9)
	})
	t.Run("deadline headers", func(t *testing.T) {
		c, srv := newCounting(http.StatusOK)
		defer srv.Close()
		tr := retryhttp.New(retryhttp.WithBase(srv.Client().Transport),
			retryhttp.WithDeadlineHeader(deadline.GRPCTimeout), retryhttp.WithDeadlineHeader(deadline.Milliseconds("X-Timeout-Ms")),
			retryhttp.WithDeadlineHeader(deadline.GRPCTimeout))
		defer tr.CloseIdleConnections()
		resp, err := (&http.Client{Transport: tr, Timeout: time.Minute}).Get(srv.URL)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, 1, c.received())
		h := c.lastHeader()
		assert.Len(t, h.Values("Grpc-Timeout"), 1, "the first and third calls' format, sent once")
		assert.Len(t, h.Values("X-Timeout-Ms"), 1, "the second call's")
	})
}

// infoLines returns the lines a JSON handler at INFO wrote to buf, decoded.
func infoLines(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var lines []map[string]any
	for line := range strings.Lines(buf.String()) {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m))
		lines = append(lines, m)
	}
	return lines
}

// TestBodyOverTheBufferLimitGivesUpAtInfo sends a PUT whose body, without
// GetBody, is longer than the buffer limit to a server answering 503: the
// server receives it once, Attempts and the give-up hook say so, and a
// logger at INFO gets the give-up, one line, as it gets the give-up of a
// body within the limit after its attempts.
func TestBodyOverTheBufferLimitGivesUpAtInfo(t *testing.T) {
	tests := []struct {
		name     string
		body     string
		received int
		reason   retryhttp.GiveUpReason
	}{
		{"over the limit", "longer than sixteen bytes", 1, retryhttp.GiveUpBodyNotReplayable},
		{"within the limit", "short", 3, retryhttp.GiveUpAttemptsExhausted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, srv := newCounting(http.StatusServiceUnavailable)
			defer srv.Close()
			var buf bytes.Buffer
			var gaveUp []retryhttp.GiveUpEvent
			tr := retryhttp.New(append([]retryhttp.Option{retryhttp.WithBase(srv.Client().Transport), retryhttp.WithBodyBufferLimit(16),
				retryhttp.WithLogger(slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))),
				retryhttp.WithOnGiveUp(func(e retryhttp.GiveUpEvent) { gaveUp = append(gaveUp, e) })}, fast...)...)
			defer tr.CloseIdleConnections()
			// A reader http.NewRequest gives no GetBody.
			req, err := http.NewRequest(http.MethodPut, srv.URL, io.MultiReader(strings.NewReader(tt.body)))
			require.NoError(t, err)
			resp, err := (&http.Client{Transport: tr}).Do(req)
			require.NoError(t, err)
			resp.Body.Close()

			assert.Equal(t, tt.received, c.received(), "requests the server received")
			assert.Equal(t, c.received(), retryhttp.Attempts(resp))
			require.Len(t, gaveUp, 1)
			assert.Equal(t, tt.reason, gaveUp[0].Reason)
			assert.Equal(t, c.received(), gaveUp[0].Attempt)
			lines := infoLines(t, &buf)
			require.Len(t, lines, 1, "one line at INFO a call")
			assert.Equal(t, "INFO", lines[0]["level"])
			assert.Equal(t, "retryhttp: not retrying", lines[0]["msg"])
			assert.Equal(t, string(tt.reason), lines[0]["reason"])
			assert.EqualValues(t, c.received(), lines[0]["attempt"])
		})
	}
}

// TestStackedTransportsAtAnyDepth checks that a Transport 20 wrappers
// deep is refused as a base, and that one New cannot see, under a wrapper
// with no Unwrap, is not retried over: the outer Transport sends each of
// its retries once through it, and does not retry the outcome of the
// inner's own retries. A GET to a server answering 503, or a connection
// refused, arrives 3 times, the inner's attempts (9 before either rule, 5
// with the first alone); a success through both arrives once.
func TestStackedTransportsAtAnyDepth(t *testing.T) {
	var deep http.RoundTripper = retryhttp.New()
	for range 20 {
		deep = wrapper{deep}
	}
	assert.Panics(t, func() { retryhttp.New(retryhttp.WithBase(deep)) }, "20 wrappers deep")

	c, srv := newCounting(http.StatusServiceUnavailable)
	defer srv.Close()
	inner := retryhttp.New(append([]retryhttp.Option{retryhttp.WithBase(srv.Client().Transport)}, fast...)...)
	defer inner.CloseIdleConnections()
	outer := retryhttp.New(append([]retryhttp.Option{retryhttp.WithBase(opaque{inner}) /* no Unwrap, as a logging or an authenticating RoundTripper usually has */}, fast...)...)
	resp, err := (&http.Client{Transport: outer}).Get(srv.URL)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Equal(t, 3, c.received(), "requests the server received through two Transports")
	assert.Equal(t, 3, retryhttp.Attempts(resp), "the inner's attempts, as the outer reports them")

	// A dial refused: the inner's *Error says 3 attempts, and the outer
	// adds none.
	var dials atomic.Int32
	refusing := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return nil, &net.OpError{Op: "dial", Net: network, Err: syscall.ECONNREFUSED}
	}}
	inner2 := retryhttp.New(append([]retryhttp.Option{retryhttp.WithBase(refusing)}, fast...)...)
	outer2 := retryhttp.New(append([]retryhttp.Option{retryhttp.WithBase(opaque{inner2})}, fast...)...)
	_, err = (&http.Client{Transport: outer2}).Get("http://refused.test/")
	require.Error(t, err)
	assert.EqualValues(t, 3, dials.Load(), "dials through two Transports")
}
