package retryhttp

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp/backoff"
)

// TestHTTP2RetriesNeverStorm is 100 runs of 50 GETs in flight together on
// one warm HTTP/2 connection (TLS, loopback), each first attempt answered
// 503 and each retry 200, over a base made as the default base is (its
// dialer, its session cache): no run opens more than 5 new connections,
// whether the Transport traces every attempt (a hook) or only those of a
// host that failed. Half the runs trace, half do not.
func TestHTTP2RetriesNeverStorm(t *testing.T) {
	const runs, n = 100, 50
	var mu sync.Mutex
	seen := make(map[string]int)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-Request-Id")
		mu.Lock()
		seen[id]++
		attempt := seen[id]
		mu.Unlock()
		if id != "warm" && attempt == 1 {
			http.Error(w, "unavailable", http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "ok")
	}))
	var conns atomic.Int32
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	tls := srv.Client().Transport.(*http.Transport).TLSClientConfig

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
	worst := 0
	for run := range runs {
		b := defaultBase()
		b.TLSClientConfig = tls.Clone()
		resumeTLS(b)
		opts := []Option{WithBase(b), WithBackoff(backoff.Constant(0))}
		if run%2 == 1 {
			opts = append(opts, WithOnRetry(func(RetryEvent) {})) // every attempt traced
		}
		tr := New(opts...)
		mu.Lock()
		clear(seen)
		mu.Unlock()
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
		worst = max(worst, fresh)
		assert.Zero(t, failed.Load(), "run %d: failed requests", run)
		assert.LessOrEqual(t, fresh, 5, "run %d (traced: %v): new connections", run, run%2 == 1)
		tr.CloseIdleConnections()
	}
	t.Logf("most new connections in a run: %d", worst)
}
