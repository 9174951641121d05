package retryhttp

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/retryhttp/retryhttp/backoff"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp/internal/replay"
)

// fastRetries paces loopback tests' retries by a millisecond.
var fastRetries = []Option{WithBackoff(backoff.Constant(time.Millisecond)), WithThrottleBackoff(backoff.Constant(time.Millisecond))}

// failFirstServer answers 503 to its first n requests, and 200 after; it
// counts the requests that reached the handler.
func failFirstServer(t *testing.T, n int64) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if calls.Add(1) <= n {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "ok")
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

func TestBlankIdempotencyKeyIsNoKey(t *testing.T) {
	tests := []struct {
		name       string
		header     http.Header
		executions int64
		status     int
	}{
		{"empty Idempotency-Key", http.Header{"Idempotency-Key": {""}}, 1, http.StatusServiceUnavailable},
		{"spaces and a tab", http.Header{"Idempotency-Key": {" \t "}}, 1, http.StatusServiceUnavailable},
		{"empty X-Idempotency-Key", http.Header{"X-Idempotency-Key": {""}}, 1, http.StatusServiceUnavailable},
		{"two blank values", http.Header{"Idempotency-Key": {"", " "}}, 1, http.StatusServiceUnavailable},
		{"a key", http.Header{"Idempotency-Key": {"order-42"}}, 2, http.StatusOK},
		{"a blank key beside a key", http.Header{"Idempotency-Key": {""}, "X-Idempotency-Key": {"order-42"}}, 2, http.StatusOK},
		{"declared with no value", http.Header{"Idempotency-Key": nil}, 2, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, calls := failFirstServer(t, 1)
			tr := New(fastRetries...)
			defer tr.CloseIdleConnections()
			req, err := http.NewRequest(http.MethodPost, srv.URL, http.NoBody)
			require.NoError(t, err)
			for k, v := range tt.header {
				req.Header[k] = v
			}
			resp, err := tr.RoundTrip(req)
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, tt.status, resp.StatusCode)
			assert.Equal(t, tt.executions, calls.Load(), "executions")
		})
	}
}

func TestBlankIdempotencyKeyIsReplacedByAnAutomaticKey(t *testing.T) {
	var keys []string
	tr := New(WithIdempotencyKeys(), WithBase(rtFunc(func(r *http.Request) (*http.Response, error) {
		keys = append(keys, r.Header.Get("Idempotency-Key"))
		return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: r}, nil
	})))
	req, err := http.NewRequest(http.MethodPost, "http://example.test/", http.NoBody)
	require.NoError(t, err)
	req.Header.Set("Idempotency-Key", " ")
	resp, err := tr.RoundTrip(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Len(t, keys, 1)
	assert.Len(t, keys[0], 36, "a random key replaces the blank one")
	assert.Equal(t, " ", req.Header.Get("Idempotency-Key"), "the caller's request is not modified")
}

// hangFirstServer holds its first request until the test ends, and answers
// 200 to the others; started holds one value per request.
func hangFirstServer(t *testing.T, h2 bool) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var calls atomic.Int64
	release := make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		_, _ = io.WriteString(w, "ok")
	}))
	if h2 {
		srv.EnableHTTP2 = true
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(func() {
		close(release)
		srv.Close()
	})
	return srv, &calls
}

func TestResponseHeaderTimeoutIsRetried(t *testing.T) {
	for _, h2 := range []bool{false, true} {
		name := "HTTP/1.1"
		if h2 {
			name = "HTTP/2"
		}
		t.Run(name, func(t *testing.T) {
			srv, calls := hangFirstServer(t, h2)
			base := srv.Client().Transport.(*http.Transport).Clone()
			base.ResponseHeaderTimeout = 50 * time.Millisecond
			if h2 {
				base.ForceAttemptHTTP2 = true
			}
			tr := New(append([]Option{WithBase(base)}, fastRetries...)...)
			defer tr.CloseIdleConnections()

			// The caller's context is alive, with a deadline of its own.
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
			require.NoError(t, err)
			resp, err := tr.RoundTrip(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			assert.Equal(t, http.StatusOK, resp.StatusCode)
			assert.Equal(t, 2, Attempts(resp))
			assert.Equal(t, int64(2), calls.Load())
			if h2 {
				assert.Equal(t, 2, resp.ProtoMajor)
			} else {
				assert.Equal(t, 1, resp.ProtoMajor)
			}
		})
	}
}

func TestCallerDeadlineIsNotRetried(t *testing.T) {
	srv, calls := hangFirstServer(t, false)
	tr := New(fastRetries...)
	defer tr.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	require.NoError(t, err)
	_, err = tr.RoundTrip(req)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	var rerr *Error
	require.ErrorAs(t, err, &rerr)
	assert.Equal(t, 1, rerr.Attempts)
	assert.Equal(t, int64(1), calls.Load())
}

// storeServer answers 503 to its first request at once, without reading
// its body, and closes its connection, as a server shedding load does; it
// stores the body of the others. It returns what it stored, and a channel
// closed once the first connection is.
func storeServer(t *testing.T) (*httptest.Server, *atomic.Int64, func() []byte, <-chan struct{}) {
	t.Helper()
	var calls atomic.Int64
	var mu sync.Mutex
	var stored []byte
	closed := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			defer close(closed)
			conn, _, err := http.NewResponseController(w).Hijack()
			if err != nil {
				return
			}
			_, _ = io.WriteString(conn, "HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")
			conn.Close()
			return
		}
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		stored = b
		mu.Unlock()
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(srv.Close)
	return srv, &calls, func() []byte {
		mu.Lock()
		defer mu.Unlock()
		return stored
	}, closed
}

// afterGate reads r once gate is closed.
type afterGate struct {
	gate <-chan struct{}
	r    io.Reader
}

func (g afterGate) Read(p []byte) (int, error) {
	<-g.gate
	return g.r.Read(p)
}

func TestEarlyRejectedUploadIsFinishedAndResent(t *testing.T) {
	payload := make([]byte, 512<<10)
	for i := range payload {
		payload[i] = byte(i * 7)
	}
	tests := []struct {
		name   string
		length int64 // -1: chunked
		expect bool
	}{
		{"Content-Length", int64(len(payload)), false},
		{"chunked", -1, false},
		{"Expect: 100-continue", int64(len(payload)), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, calls, stored, closed := storeServer(t)
			tr := New(fastRetries...)
			defer tr.CloseIdleConnections()
			// A reader http.NewRequest does not recognise: no GetBody.
			// The first 320 KiB come at once, the rest once the server has
			// closed the first connection: a file or pipe slower than the
			// network.
			src := &countingBody{Reader: io.MultiReader(bytes.NewReader(payload[:320<<10]),
				afterGate{gate: closed, r: bytes.NewReader(payload[320<<10:])})}
			req, err := http.NewRequest(http.MethodPut, srv.URL+"/object", src)
			require.NoError(t, err)
			require.Nil(t, req.GetBody)
			req.ContentLength = tt.length
			if tt.expect {
				req.Header.Set("Expect", "100-continue")
			}
			resp, err := tr.RoundTrip(req)
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, http.StatusCreated, resp.StatusCode)
			assert.Equal(t, int64(2), calls.Load())
			assert.Equal(t, 2, Attempts(resp))
			assert.True(t, bytes.Equal(payload, stored()), "stored %d bytes of %d", len(stored()), len(payload))
			assert.Equal(t, int32(1), src.closes.Load(), "the caller's body is closed once")
		})
	}
}

// stallingUpload gives its first bytes, then blocks until it is closed, as
// a pipe whose writer waits for the response would.
type stallingUpload struct {
	io.Reader
	stall  *stallingBody
	closes atomic.Int32
}

func newStallingUpload(first string) *stallingUpload {
	stall := &stallingBody{closed: make(chan struct{})}
	return &stallingUpload{Reader: io.MultiReader(strings.NewReader(first), stall), stall: stall}
}

func (b *stallingUpload) Close() error {
	b.closes.Add(1)
	return b.stall.Close()
}

func TestUnfinishedUploadThatStallsIsNotResent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var attempts int
		base := rtFunc(func(r *http.Request) (*http.Response, error) {
			attempts++
			b := make([]byte, 4)
			_, _ = io.ReadFull(r.Body, b)
			r.Body.Close()
			return &http.Response{StatusCode: http.StatusServiceUnavailable, Body: http.NoBody, Request: r}, nil
		})
		src := newStallingUpload("0123456789")
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPut, "http://svc.test/", src)
		require.NoError(t, err)
		start := time.Now()
		resp, err := New(WithBase(base)).RoundTrip(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
		assert.Equal(t, 1, attempts)
		assert.Equal(t, replay.FinishTimeout, time.Since(start), "the copy waits for the body within its bound")
		synctest.Wait()
		assert.EqualValues(t, 1, src.closes.Load(), "the caller's body is closed once")
	})
}
