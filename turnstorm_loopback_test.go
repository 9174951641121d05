package retryhttp

import (
	"context"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp/backoff"

	"github.com/retryhttp/retryhttp/internal/evidence"
)

// onceFailingH2 returns a TLS HTTP/2 loopback server that answers each
// X-Request-Id's first request 503 and the others 200 ("warm" always 200),
// the count of connections it accepted, and a function that forgets the
// ids it saw.
func onceFailingH2(t *testing.T) (srv *httptest.Server, conns *atomic.Int32, forget func()) {
	var mu sync.Mutex
	seen := make(map[string]int)
	srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-Request-Id")
		mu.Lock()
		seen[id]++
		n := seen[id]
		mu.Unlock()
		if id != "warm" && n == 1 {
			http.Error(w, "unavailable", http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "ok")
	}))
	conns = new(atomic.Int32)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv, conns, func() {
		mu.Lock()
		clear(seen)
		mu.Unlock()
	}
}

// newDefaultTrusting returns New(opts...) over its default base, which
// trusts srv's certificate.
func newDefaultTrusting(srv *httptest.Server, opts ...Option) *Transport {
	tr := New(opts...)
	ht := tr.base.(*http.Transport)
	ht.TLSClientConfig.RootCAs = x509.NewCertPool()
	ht.TLSClientConfig.RootCAs.AddCert(srv.Certificate())
	return tr
}

// TestH2TurnStormBounded is 100 runs of 100 GETs in flight together on
// one warm HTTP/2 connection of the default base, each answered 503 once
// and then 200, retried at once without a budget: no run opens more than
// 5 new connections. Half the runs trace every attempt (a hook). Before
// the sends net/http makes from its own pool took turns (evidence.Trace.getConn),
// about 1 run in 100 under the race detector opened 6 to 64: the
// interleaving TestH2TurnResentByBaseTakesTurns forces.
func TestH2TurnStormBounded(t *testing.T) {
	const runs, n = 100, 100
	srv, conns, forget := onceFailingH2(t)
	send := func(tr *Transport, id string) int {
		req := get(t, srv.URL)
		req.Header.Set("X-Request-Id", id)
		resp, err := tr.RoundTrip(req)
		if !assert.NoError(t, err) {
			return 0
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	hist := make(map[int]int)
	for run := range runs {
		opts := []Option{WithoutBudget(), WithBackoff(backoff.Constant(0))}
		traced := run%2 == 1
		if traced {
			opts = append(opts, WithOnRetry(func(RetryEvent) {}))
		}
		tr := newDefaultTrusting(srv, opts...)
		forget()
		require.Equal(t, http.StatusOK, send(tr, "warm"))
		before := conns.Load()
		var wg sync.WaitGroup
		var failed atomic.Int32
		for i := range n {
			wg.Go(func() {
				if send(tr, strconv.Itoa(i)) != http.StatusOK {
					failed.Add(1)
				}
			})
		}
		wg.Wait()
		fresh := int(conns.Load() - before)
		hist[fresh]++
		assert.Zero(t, failed.Load(), "run %d: failed requests", run)
		assert.LessOrEqual(t, fresh, 5, "run %d (traced: %v): new connections", run, traced)
		tr.CloseIdleConnections()
	}
	t.Logf("runs by new connections: %v", hist)
}

// TestH2TurnResentByBaseTakesTurns forces the interleaving behind the rare
// storms of TestH2TurnStormBounded. Attempts that got a host's HTTP/2
// connection from net/http (GotConn) but have not opened their stream yet
// are held there while another request fails on the connection until it
// is left, and its last attempt, holding the turn, marks the connection
// not to be reused (Request.Close). The connection then refuses the held
// attempts' streams (net/http's http2errClientConnUnusable), and net/http
// sends each again by itself, after no connection is left in its pool:
// without a turn, each of them dials one of its own, a new connection per
// held attempt, all but one never used. Sent again, they take turns as
// retries do, and share one new connection.
func TestH2TurnResentByBaseTakesTurns(t *testing.T) {
	const held = 20
	srv, conns, _ := onceFailingH2(t)
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/fail" {
			http.Error(w, "bad instance", http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "ok")
	})
	tr := newDefaultTrusting(srv, WithoutBudget(), WithBackoff(backoff.Constant(0)), WithMaxAttempts(evidence.ConnFailLimit+1),
		WithOnRetry(func(RetryEvent) {})) // every attempt traced
	defer tr.CloseIdleConnections()
	warm, err := tr.RoundTrip(get(t, srv.URL))
	require.NoError(t, err)
	io.Copy(io.Discard, warm.Body)
	warm.Body.Close()
	before := conns.Load()

	release := make(chan struct{})
	var got sync.WaitGroup
	got.Add(held)
	sends := make([]atomic.Int32, held)
	codes := make([]int, held)
	var wg sync.WaitGroup
	for i := range held {
		wg.Go(func() {
			ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
				GotConn: func(httptrace.GotConnInfo) {
					if sends[i].Add(1) == 1 {
						got.Done()
						<-release // the stream is not open yet
					}
				},
			})
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
			require.NoError(t, err)
			resp, err := tr.RoundTrip(req)
			if !assert.NoError(t, err) {
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			codes[i] = resp.StatusCode
		})
	}
	got.Wait()
	// evidence.ConnFailLimit failures leave the connection, and the last attempt,
	// holding the turn, marks it.
	resp, err := tr.RoundTrip(get(t, srv.URL+"/fail"))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	close(release)
	wg.Wait()

	fresh := conns.Load() - before
	t.Logf("new connections for %d attempts sent again by net/http: %d", held, fresh)
	for i := range held {
		assert.Equal(t, http.StatusOK, codes[i], "request %d", i)
		assert.Equal(t, int32(2), sends[i].Load(), "request %d: net/http sent it again once", i)
	}
	assert.LessOrEqual(t, fresh, int32(2), "new connections")
}
