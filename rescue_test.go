package retryhttp

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fastRetries paces loopback tests' retries by a millisecond.
var fastRetries = []Option{WithBackoff(Constant(time.Millisecond)), WithThrottleBackoff(Constant(time.Millisecond))}

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
