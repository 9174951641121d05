package retryhttp

import (
	"context"
	"crypto/x509"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/retryhttp/retryhttp/hedge"
	"github.com/retryhttp/retryhttp/internal/attempt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/retryhttp/retryhttp/internal/latency"
	"github.com/retryhttp/retryhttp/internal/testkit"
)

// hedgeServer is a loopback server whose answer to each attempt, told by
// its X-Attempt header, is a function of the attempt number. It reports on
// arrived the attempts that arrive and on cancelled those whose request
// the client cancelled.
type hedgeServer struct {
	*httptest.Server
	arrived   chan int
	cancelled chan int
}

func newHedgeServer(t *testing.T, answer func(n int, w http.ResponseWriter, r *http.Request)) *hedgeServer {
	s := &hedgeServer{arrived: make(chan int, 16), cancelled: make(chan int, 16)}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := int(r.Header.Get("X-Attempt")[0] - '0')
		s.arrived <- n
		answer(n, w, r)
		if r.Context().Err() != nil {
			s.cancelled <- n
		}
	}))
	t.Cleanup(s.Close)
	return s
}

// hang holds a request until the client cancels it.
func hang(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }

// TestHedgeLoopback checks hedging over net/http's transport and a real
// loopback server: a first attempt that loses on the caller's goroutine is
// cancelled at the server, the winner's body is whole, a first attempt
// answered before the delay keeps its connection, and no goroutine
// outlives the requests. TestHedgeLosersKeepTheirConnections has the
// losers left to answer.
func TestHedgeLoopback(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	big := strings.Repeat("x", 64<<10)
	newTransport := func(delay time.Duration) *Transport {
		base := &http.Transport{}
		t.Cleanup(base.CloseIdleConnections)
		return New(WithBase(base), WithMaxAttempts(2), WithAttemptHeader("X-Attempt"),
			WithHedging(hedge.Delay(delay)))
	}
	// fetch sends req through tr and reads the response's body whole.
	fetch := func(t *testing.T, tr *Transport, req *http.Request) (*http.Response, string) {
		t.Helper()
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err, "the winner's body is read in full")
		resp.Body.Close()
		return resp, string(b)
	}

	t.Run("the hedge wins and the first is cancelled", func(t *testing.T) {
		first := make(chan struct{})
		srv := newHedgeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
			if n == 1 {
				close(first)
				hang(w, r)
				return
			}
			<-first // so that the first is in flight when the hedge wins
			io.WriteString(w, big)
		})
		resp, body := fetch(t, newTransport(time.Millisecond), get(t, srv.URL))
		assert.Equal(t, big, body)
		assert.Equal(t, 2, attempt.Number(resp.Request.Context()), "the winner")
		assert.Equal(t, 2, Attempts(resp))
		assert.Equal(t, 1, testkit.Receive(t, srv.cancelled), "the first attempt, cancelled at the server")
	})

	t.Run("a first attempt answered at once keeps its connection", func(t *testing.T) {
		srv := newHedgeServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) { io.WriteString(w, big) })
		tr := newTransport(time.Hour)
		for i := range 3 {
			var reused bool
			req := get(t, srv.URL)
			req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
				GotConn: func(info httptrace.GotConnInfo) { reused = info.Reused },
			}))
			resp, body := fetch(t, tr, req)
			assert.Len(t, body, len(big))
			assert.Equal(t, req.Context(), resp.Request.Context(), "the caller's context, as from a plain transport")
			assert.Equal(t, i > 0, reused, "request %d", i)
		}
	})
}

// TestHedgeNothingAfterReturn checks that once RoundTrip has returned, no
// timer of the call sends anything more, however long the clock runs.
func TestHedgeNothingAfterReturn(t *testing.T) {
	for _, first := range []time.Duration{time.Millisecond, 15 * time.Millisecond, time.Second} {
		t.Run(first.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				base := &slowBase{answer: func(n int) (time.Duration, int) {
					if n == 1 {
						return first, 200
					}
					return 2 * time.Millisecond, 200
				}}
				var hedges hedgeEvents
				tr := newTestTransport(base, 0, WithHedging(hedge.Delay(10*time.Millisecond)), hedges.option())
				resp, err := tr.RoundTrip(get(t, "http://svc.test/"))
				require.NoError(t, err)
				resp.Body.Close()
				calls, sent := base.calls(), hedges.count()
				time.Sleep(time.Hour)
				synctest.Wait()
				assert.Equal(t, calls, base.calls())
				assert.Equal(t, sent, hedges.count())
			})
		})
	}
}

// TestHedgeCapAfterQuietSpell checks that the cap is over any run of
// requests: a host that needed no hedges for a long time does not save
// them for the moment it turns slow.
func TestHedgeCapAfterQuietSpell(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var slow bool
		base := &slowBase{answer: func(int) (time.Duration, int) {
			if slow {
				return 30 * time.Millisecond, 200
			}
			return time.Millisecond, 200
		}}
		var hedges hedgeEvents
		tr := newTestTransport(base, 0, WithHedging(hedge.Delay(10*time.Millisecond)), WithoutBudget(), hedges.option())
		do := func(n int) {
			for range n {
				resp, err := tr.RoundTrip(get(t, "http://svc.test/"))
				require.NoError(t, err)
				resp.Body.Close()
			}
		}
		do(5000)
		require.Zero(t, hedges.count())
		slow = true
		do(1000)
		assert.LessOrEqual(t, hedges.count(), 1000*5/100+latency.HedgeBurst)
	})
}

// TestHedgeErrorDoesNotWin checks that an attempt's error, even one never
// retried, does not end the race while another attempt may still answer.
func TestHedgeErrorDoesNotWin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		base := rtFunc(func(r *http.Request) (*http.Response, error) {
			if calls.Add(1) == 2 {
				return nil, x509.UnknownAuthorityError{}
			}
			select {
			case <-time.After(50 * time.Millisecond):
				return &http.Response{StatusCode: 200, Header: http.Header{}, Body: http.NoBody, Request: r}, nil
			case <-r.Context().Done():
				return nil, r.Context().Err()
			}
		})
		tr := newTestTransport(base, 0, WithMaxAttempts(2), WithHedging(hedge.Delay(10*time.Millisecond)))
		resp, err := tr.RoundTrip(get(t, "http://svc.test/"))
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, 200, resp.StatusCode)
		assert.Equal(t, 2, Attempts(resp))
	})
}

// TestHedgeAttemptsThroughAWrappingBase checks that Attempts counts every
// attempt sent even when the base returns a request of its own making, as
// instrumenting transports do.
func TestHedgeAttemptsThroughAWrappingBase(t *testing.T) {
	type key struct{}
	synctest.Test(t, func(t *testing.T) {
		inner := &slowBase{answer: func(n int) (time.Duration, int) {
			if n == 1 {
				return 15 * time.Millisecond, 200
			}
			return time.Second, 200
		}}
		base := rtFunc(func(r *http.Request) (*http.Response, error) {
			return inner.RoundTrip(r.WithContext(context.WithValue(r.Context(), key{}, "span")))
		})
		tr := newTestTransport(base, 0, WithHedging(hedge.Delay(10*time.Millisecond)))
		resp, err := tr.RoundTrip(get(t, "http://svc.test/"))
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, 2, Attempts(resp))
		assert.Equal(t, 1, attempt.Number(resp.Request.Context()), "the winner")
		assert.Equal(t, "span", resp.Request.Context().Value(key{}), "the base's own request, kept")
	})
}
