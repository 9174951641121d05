package retryhttp

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp/hedge"
	"github.com/retryhttp/retryhttp/internal/hedging"
)

// TestHedgeLosersKeepTheirConnections proves, over net/http's transport
// and a real loopback server speaking HTTP/1, that an attempt that loses
// once it has a connection is left to answer rather than cancelled, so
// that its connection goes back to the pool: 20 requests whose hedge wins
// each time cost the server 3 connections, not one more for each request.
// The first attempt of the first request holds the caller's goroutine and
// is cancelled, which closes its connection; from then on the host's first
// attempts are sent apart, and each is left to answer, uncancelled, after
// RoundTrip has returned. The hedge that loses to a first attempt is left
// to answer as well.
func TestHedgeLosersKeepTheirConnections(t *testing.T) {
	const requests = 20
	var conns atomic.Int32
	var release atomic.Pointer[chan struct{}] // closed: the current request's first attempt answers
	firsts := make(chan error, 1)             // what became of each first attempt at the server
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.Header.Get("X-Attempt"), "1") {
			io.WriteString(w, "hedge")
			return
		}
		select {
		case <-*release.Load():
			io.WriteString(w, "first")
			w.(http.Flusher).Flush()
			firsts <- r.Context().Err()
		case <-r.Context().Done():
			firsts <- r.Context().Err()
		}
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	base := defaultBase()
	defer base.CloseIdleConnections()
	tr := New(WithBase(base), WithMaxAttempts(2), WithAttemptHeader("X-Attempt"), WithoutBudget(),
		WithHedging(hedge.Delay(time.Millisecond), hedge.MaxFraction(1)))

	pooled := make(chan struct{}, 2*requests) // a connection went back to the pool
	for i := range requests {
		answer := make(chan struct{})
		release.Store(&answer)
		req := get(t, srv.URL)
		req.Header.Set("X-Request", strconv.Itoa(i))
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
			PutIdleConn: func(err error) {
				if err == nil {
					pooled <- struct{}{}
				}
			},
		}))
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, "hedge", string(body), "request %d", i)
		assert.Equal(t, 2, Attempts(resp), "request %d: both were sent", i)
		if i == 0 {
			require.ErrorIs(t, <-firsts, context.Canceled, "the first request's first attempt, on the caller's goroutine")
			<-pooled // the hedge's connection
			continue
		}
		close(answer)
		require.NoError(t, <-firsts, "request %d: its first attempt answered, uncancelled", i)
		<-pooled // the hedge's connection
		<-pooled // the first attempt's, once its answer was read
	}
	assert.LessOrEqual(t, conns.Load(), int32(3), "server connections for %d requests", requests)

	t.Run("a hedge that loses is left to answer", func(t *testing.T) {
		hedged, answer := make(chan struct{}), make(chan struct{})
		answered := make(chan error, 1)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasPrefix(r.Header.Get("X-Attempt"), "1") {
				<-hedged // the hedge is in flight when the first wins
				io.WriteString(w, "first")
				return
			}
			close(hedged)
			select {
			case <-answer:
			case <-r.Context().Done():
			}
			io.WriteString(w, "hedge")
			w.(http.Flusher).Flush()
			answered <- r.Context().Err()
		}))
		defer srv.Close()
		base := defaultBase()
		defer base.CloseIdleConnections()
		tr := New(WithBase(base), WithMaxAttempts(2), WithAttemptHeader("X-Attempt"), WithoutBudget(),
			WithHedging(hedge.Delay(time.Millisecond)))
		resp, err := tr.RoundTrip(get(t, srv.URL))
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.Equal(t, "first", string(body))
		assert.Equal(t, 2, Attempts(resp))
		close(answer)
		assert.NoError(t, <-answered, "the hedge answered, uncancelled")
	})
}

// pipeNet is an in-memory network for a server and a Transport in one
// testing/synctest bubble: each dial is a net.Pipe, whose server end the
// listener accepts.
type pipeNet struct {
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func newPipeNet() *pipeNet {
	return &pipeNet{conns: make(chan net.Conn), closed: make(chan struct{})}
}

func (n *pipeNet) Accept() (net.Conn, error) {
	select {
	case c := <-n.conns:
		return c, nil
	case <-n.closed:
		return nil, net.ErrClosed
	}
}

func (n *pipeNet) Close() error   { n.once.Do(func() { close(n.closed) }); return nil }
func (n *pipeNet) Addr() net.Addr { return pipeAddr{} }

func (n *pipeNet) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case n.conns <- server:
		return client, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-n.closed:
		return nil, net.ErrClosed
	}
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }

// serveOnPipes serves h on an in-memory network in the caller's bubble and
// returns an *http.Transport that reaches it, both closed at cleanup.
func serveOnPipes(t *testing.T, h http.HandlerFunc) *http.Transport {
	n := newPipeNet()
	srv := &http.Server{Handler: h}
	go srv.Serve(n)
	base := &http.Transport{DialContext: n.dial}
	t.Cleanup(func() {
		base.CloseIdleConnections()
		srv.Close()
	})
	return base
}

// TestHedgeLoserWaitIsBounded proves the bound of an attempt left to
// answer: one that never answers is cancelled LoserWait after the winner
// returned, not sooner when the caller's context ends at once, and not
// later; a hedge, and a first attempt sent apart.
func TestHedgeLoserWaitIsBounded(t *testing.T) {
	for _, loser := range []string{"hedge", "first"} {
		t.Run(loser, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ended := make(chan time.Duration, 1) // how long after the winner returned the loser ended
				var won atomic.Int64                 // when the winner returned, in ns since the bubble began
				began := time.Now()
				hedged := make(chan struct{}, 1)
				base := serveOnPipes(t, func(w http.ResponseWriter, r *http.Request) {
					first := strings.HasPrefix(r.Header.Get("X-Attempt"), "1")
					if !first {
						hedged <- struct{}{}
					}
					if first == (loser == "first") {
						<-r.Context().Done()
						if won.Load() != 0 {
							ended <- time.Since(began) - time.Duration(won.Load())
						}
						return
					}
					if first {
						<-hedged // the hedge is in flight when the first wins
					}
					io.WriteString(w, "winner")
				})
				tr := New(WithBase(base), WithMaxAttempts(2), WithAttemptHeader("X-Attempt"), WithoutBudget(),
					WithHedging(hedge.Delay(10*time.Millisecond)))
				do := func() {
					ctx, cancel := context.WithCancel(t.Context())
					resp, err := tr.RoundTrip(get(t, "http://svc.test/").WithContext(ctx))
					require.NoError(t, err)
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					cancel() // the caller is gone at once
				}
				if loser == "first" {
					do() // its first attempt, cancelled, has the next ones sent apart
					synctest.Wait()
					<-hedged
				}
				won.Store(1) // armed: set as the winner returns below
				ctx, cancel := context.WithCancel(t.Context())
				resp, err := tr.RoundTrip(get(t, "http://svc.test/").WithContext(ctx))
				won.Store(int64(time.Since(began)))
				require.NoError(t, err)
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				cancel()
				assert.Equal(t, hedging.LoserWait, <-ended, "the loser's wait")
			})
		})
	}
}
