package retryhttp_test

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/backoff"
	"github.com/retryhttp/retryhttp/retryhttptest"
)

// barrier holds the first attempts of n requests until all n have
// arrived, so that they are in flight together; later attempts (a retry,
// a resume) pass at once.
type barrier struct {
	n       int
	mu      sync.Mutex
	seen    map[string]int
	arrived int
	all     chan struct{}
}

func newBarrier(n int) *barrier {
	return &barrier{n: n, seen: make(map[string]int), all: make(chan struct{})}
}

// arrive records an attempt of r's request and returns its number, once
// every first attempt has arrived; false when r's context ended first.
func (b *barrier) arrive(r *http.Request) (int, bool) {
	b.mu.Lock()
	id := r.Header.Get(idHeader)
	b.seen[id]++
	attempt := b.seen[id]
	if attempt == 1 {
		b.arrived++
		if b.arrived == b.n {
			close(b.all)
		}
	}
	b.mu.Unlock()
	if attempt > 1 {
		return attempt, true
	}
	select {
	case <-b.all:
		return attempt, true
	case <-r.Context().Done():
		return attempt, false
	}
}

// TestHTTP2ConcurrentResumesShareOneConnection is 50 downloads multiplexed
// on one warm HTTP/2 connection, each stream reset once after 64 KiB: the
// 50 resumes open at most a few new connections, and every body is read
// whole.
func TestHTTP2ConcurrentResumesShareOneConnection(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	const n = 50
	body := content(256<<10, 7)
	f := newFile(version{body: body, etag: `"v1"`})
	b := newBarrier(n)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(idHeader) != "warm" {
			if _, ok := b.arrive(r); !ok {
				return
			}
		}
		f.ServeHTTP(w, r)
	})
	srv := retryhttptest.NewHTTP2Server(h, retryhttptest.Func(func(key string, attempt int) retryhttptest.Fault {
		if attempt == 1 && key != "warm" {
			return retryhttptest.ResetAfter(64 << 10)
		}
		return retryhttptest.Pass()
	}), retryhttptest.KeyHeader(idHeader))
	defer srv.Close()
	base := srv.Client().Transport.(*http.Transport)
	defer base.CloseIdleConnections()
	var resumes atomic.Int32
	rt := retryhttp.New(retryhttp.WithBase(base), retryhttp.WithBackoff(backoff.Constant(0)),
		retryhttp.WithOnRetry(func(e retryhttp.RetryEvent) {
			if e.Resume {
				resumes.Add(1)
			}
		}))
	warm(t, rt, srv.URL)
	require.Equal(t, 1, srv.Connections())

	whole := make([]bool, n)
	concurrently(n, func(i int) {
		req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
		req.Header.Set(idHeader, "d"+strconv.Itoa(i))
		resp, err := rt.RoundTrip(req)
		if !assert.NoError(t, err) {
			return
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		whole[i] = assert.NoError(t, err) && assert.Equal(t, len(body), len(got)) && string(got) == string(body)
	})
	fresh := srv.Connections() - 1
	t.Logf("%d resumes, %d new connections", resumes.Load(), fresh)
	assert.Equal(t, int32(n), resumes.Load(), "resumes")
	assert.NotContains(t, whole, false, "every body whole")
	assert.LessOrEqual(t, fresh, 5, "new connections")
}

// TestHTTP2ConcurrentRetriesShareOneConnection is 50 GETs multiplexed on
// one warm HTTP/2 connection, each answered 503 once and then 200: the 50
// retries open at most a few new connections, and every request succeeds.
func TestHTTP2ConcurrentRetriesShareOneConnection(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	const n = 50
	b := newBarrier(n)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(idHeader) == "warm" {
			io.WriteString(w, "ok\n")
			return
		}
		attempt, ok := b.arrive(r)
		switch {
		case !ok:
		case attempt == 1:
			http.Error(w, "unavailable", http.StatusServiceUnavailable)
		default:
			io.WriteString(w, "ok\n")
		}
	})
	srv := retryhttptest.NewHTTP2Server(h, retryhttptest.Pass())
	defer srv.Close()
	base := srv.Client().Transport.(*http.Transport)
	defer base.CloseIdleConnections()
	rt := retryhttp.New(retryhttp.WithBase(base), retryhttp.WithBackoff(backoff.Constant(0)))
	warm(t, rt, srv.URL)
	require.Equal(t, 1, srv.Connections())

	var ok atomic.Int32
	concurrently(n, func(i int) {
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, srv.URL, nil)
		req.Header.Set(idHeader, "r"+strconv.Itoa(i))
		resp, err := rt.RoundTrip(req)
		if !assert.NoError(t, err) {
			return
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if assert.NoError(t, err) && assert.Equal(t, http.StatusOK, resp.StatusCode) && assert.Equal(t, "ok\n", string(got)) {
			assert.Equal(t, 2, retryhttp.Attempts(resp))
			ok.Add(1)
		}
	})
	fresh := srv.Connections() - 1
	t.Logf("%d successes, %d new connections", ok.Load(), fresh)
	assert.Equal(t, int32(n), ok.Load(), "successes")
	assert.LessOrEqual(t, fresh, 5, "new connections")
}
