package retryhttp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jarcoal/httpmock"
	"github.com/retryhttp/retryhttp/backoff"
	"github.com/retryhttp/retryhttp/budget"
	"github.com/retryhttp/retryhttp/classify"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp/internal/attempt"
	"github.com/retryhttp/retryhttp/internal/evidence"
)

// dialRefused is the error net/http returns when nothing listens on a port.
var dialRefused = &net.OpError{Op: "dial", Net: "tcp", Err: &net.OpError{Op: "connect", Err: syscall.ECONNREFUSED}}

func TestZeroConfigClient(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "hello")
	}))
	defer srv.Close()

	tr := New()
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	resp, err := client.Get(srv.URL)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Equal(t, "hello", string(body))
	assert.EqualValues(t, 2, calls.Load(), "server calls")
	assert.Equal(t, 2, Attempts(resp))
}

func TestFinalResponseReturnedUnread(t *testing.T) {
	// When retries end, the caller gets the last response as the base gave
	// it: status, headers and an unread body, with a nil error.
	tests := []struct {
		name     string
		opts     []Option
		steps    []step
		attempts int
	}{
		{"attempts exhausted", nil, statuses(503), 3},
		{"not retryable", nil, statuses(404), 1},
		{"budget exhausted", []Option{WithBudget(budget.NewBucket(budget.Capacity(5), budget.TimeoutCost(5)))}, statuses(503), 2},
		{"Retry-After over limit", nil, []step{{status: 503, header: http.Header{"Retry-After": {"3600"}}, body: "later"}}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				base := &script{steps: tt.steps}
				resp, err := newTestTransport(base, 0.5, tt.opts...).RoundTrip(get(t, "http://svc.test/x"))
				require.NoError(t, err)
				require.NotNil(t, resp)
				assert.Equal(t, tt.steps[0].status, resp.StatusCode)
				assert.Equal(t, tt.attempts, base.count(), "attempts")
				assert.Equal(t, tt.attempts, Attempts(resp))
				assert.Equal(t, tt.steps[0].header.Get("Retry-After"), resp.Header.Get("Retry-After"))
				base.requireDiscardedClosed(t, resp)
				body, err := io.ReadAll(resp.Body)
				require.NoError(t, err)
				assert.Equal(t, tt.steps[0].body, string(body), "final body must be unread")
			})
		})
	}
}

// TestTooEarlyIsFinal: a 425 Too Early is returned as it is after one
// attempt, whatever the method, and with the Early-Data: 1 of a request an
// intermediary received in early data: net/http never sends early data, so
// a retry would be the same request, and RFC 8470 sends the 425 of a
// request received in early data back to the client that sent it.
func TestTooEarlyIsFinal(t *testing.T) {
	for _, tc := range []struct {
		name   string
		method string
		header http.Header
	}{
		{"GET", http.MethodGet, nil},
		{"POST with an Idempotency-Key", http.MethodPost, http.Header{"Idempotency-Key": {"order-42"}}},
		{"POST without a key", http.MethodPost, nil},
		{"GET forwarded from early data", http.MethodGet, http.Header{"Early-Data": {"1"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				base := &script{steps: []step{{status: http.StatusTooEarly, body: "too early"}, {status: http.StatusOK}}}
				var retried, gaveUp atomic.Int32
				rt := newTestTransport(base, 0.5,
					WithOnRetry(func(RetryEvent) { retried.Add(1) }),
					WithOnGiveUp(func(GiveUpEvent) { gaveUp.Add(1) }))
				req, body := withBody(t, context.Background(), tc.method, "http://svc.test/x", "payload", true)
				for k, v := range tc.header {
					req.Header[k] = v
				}
				resp, err := rt.RoundTrip(req)
				require.NoError(t, err)
				assert.Equal(t, http.StatusTooEarly, resp.StatusCode)
				assert.Equal(t, 1, base.count(), "attempts")
				assert.Equal(t, 1, Attempts(resp))
				assert.Zero(t, retried.Load(), "retries")
				assert.Zero(t, gaveUp.Load(), "give-ups: a 425 is final")
				assert.EqualValues(t, 1, body.closes.Load(), "request body closes")
				base.requireDiscardedClosed(t, resp)
				got, err := io.ReadAll(resp.Body)
				require.NoError(t, err)
				resp.Body.Close()
				assert.Equal(t, "too early", string(got))
			})
		})
	}
}

func TestErrorWrapsCauseAndCountsAttempts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := &script{steps: []step{{err: dialRefused}}}
		resp, err := newTestTransport(base, 0.5).RoundTrip(get(t, "http://svc.test/"))
		require.Nil(t, resp)
		require.Error(t, err)
		assert.ErrorIs(t, err, syscall.ECONNREFUSED)
		var opErr *net.OpError
		require.ErrorAs(t, err, &opErr)
		assert.Equal(t, "dial", opErr.Op)
		var rerr *Error
		require.ErrorAs(t, err, &rerr)
		assert.Equal(t, 3, rerr.Attempts)
		assert.Contains(t, err.Error(), "3 attempts")
		assert.Equal(t, 3, base.count())
	})
}

func TestBaseContractViolations(t *testing.T) {
	t.Run("nil response and nil error", func(t *testing.T) {
		tr := New(WithBase(rtFunc(func(*http.Request) (*http.Response, error) { return nil, nil })), WithMaxAttempts(1))
		resp, err := tr.RoundTrip(get(t, "http://svc.test/"))
		assert.Nil(t, resp)
		assert.Error(t, err)
	})
	t.Run("response and error", func(t *testing.T) {
		b := newCountingBody("x")
		tr := New(WithBase(rtFunc(func(*http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: 200, Body: b}, errors.New("boom")
		})), WithMaxAttempts(1))
		resp, err := tr.RoundTrip(get(t, "http://svc.test/"))
		assert.Nil(t, resp)
		assert.Error(t, err)
		assert.EqualValues(t, 1, b.closes.Load(), "the stray body is closed")
	})
	t.Run("nil body", func(t *testing.T) {
		tr := New(WithBase(rtFunc(func(*http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: 204}, nil
		})))
		resp, err := tr.RoundTrip(get(t, "http://svc.test/"))
		require.NoError(t, err)
		require.NotNil(t, resp.Body)
		require.NoError(t, resp.Body.Close())
	})
}

func TestBadRequests(t *testing.T) {
	body := newCountingBody("x")
	tests := []struct {
		name string
		req  *http.Request
	}{
		{"nil request", nil},
		{"nil URL", &http.Request{Method: "GET", Header: http.Header{}}},
		{"nil header", &http.Request{Method: "POST", URL: mustURL("http://svc.test/"), Body: body}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := &script{steps: statuses(200)}
			var resp *http.Response
			var err error
			require.NotPanics(t, func() { resp, err = New(WithBase(base)).RoundTrip(tt.req) })
			assert.Nil(t, resp)
			assert.ErrorContains(t, err, "nil")
			assert.Zero(t, base.count())
		})
	}
	assert.EqualValues(t, 1, body.closes.Load(), "body of a rejected request is closed")
}

func TestCallerRequestNotModified(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := &script{steps: statuses(503, 503, 200)}
		tr := newTestTransport(base, 0.5, WithIdempotencyKeys(), WithAttemptTimeout(time.Second))
		req, _ := withBody(t, t.Context(), http.MethodPost, "http://svc.test/p?q=1", "payload", false)
		req.Header.Set("X-Mine", "1")
		before := *req
		beforeHeader := req.Header.Clone()
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, beforeHeader, req.Header, "header")
		assert.Equal(t, before.URL, req.URL)
		assert.Equal(t, before.ContentLength, req.ContentLength)
		assert.True(t, before.Context() == req.Context(), "context")
		assert.True(t, before.Body == req.Body, "body")
		assert.Nil(t, req.GetBody, "GetBody")
	})
}

// TestRequestBodyClosedOnce checks that the caller's body, and every body
// GetBody produced, is closed exactly once, whatever path the request takes.
func TestRequestBodyClosedOnce(t *testing.T) {
	tests := []struct {
		name    string
		steps   []step
		getBody bool
		opts    []Option
		cancel  bool // cancel the request during the first wait
	}{
		{"success", statuses(200), true, nil, false},
		{"not retryable", statuses(400), true, nil, false},
		{"retried then success", statuses(503, 200), true, nil, false},
		{"attempts exhausted", statuses(503), true, nil, false},
		{"budget exhausted", statuses(503), true, []Option{WithBudget(budget.NewBucket(budget.Capacity(5), budget.TimeoutCost(5)))}, false},
		{"cancelled while waiting", statuses(503), true, nil, true},
		{"buffered, retried", statuses(503, 200), false, nil, false},
		{"streamed once", statuses(503), false, []Option{WithBodyBufferLimit(2)}, false},
		{"retries off", statuses(503), false, []Option{WithMaxAttempts(1)}, false},
		{"error then success", []step{{err: dialRefused}, {status: 200}}, true, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				base := &script{steps: tt.steps}
				opts := tt.opts
				if tt.cancel {
					opts = append(opts, WithOnRetry(func(RetryEvent) { cancel() }))
				}
				req, body := withBody(t, ctx, http.MethodPut, "http://svc.test/", "payload", false)
				var made []*countingBody
				if tt.getBody {
					req.GetBody = func() (io.ReadCloser, error) {
						b := newCountingBody("payload")
						made = append(made, b)
						return b, nil
					}
				}
				resp, err := newTestTransport(base, 0.5, opts...).RoundTrip(req)
				if err == nil {
					resp.Body.Close()
				}
				assert.EqualValues(t, 1, body.closes.Load(), "caller's body closes")
				for i, b := range made {
					assert.EqualValues(t, 1, b.closes.Load(), "GetBody body %d closes", i+1)
				}
				for i, got := range base.bodies {
					assert.Equal(t, "payload", got, "body of attempt %d", i+1)
				}
			})
		})
	}
}

func TestGetBodyBodyClosedWhenRetryAbandoned(t *testing.T) {
	// The next attempt's body is made before the budget is asked; when the
	// budget refuses, that body must still be closed.
	synctest.Test(t, func(t *testing.T) {
		base := &script{steps: statuses(503)}
		req, _ := withBody(t, t.Context(), http.MethodPut, "http://svc.test/", "payload", false)
		var made []*countingBody
		req.GetBody = func() (io.ReadCloser, error) {
			b := newCountingBody("payload")
			made = append(made, b)
			return b, nil
		}
		bucket := budget.NewBucket(budget.Capacity(5), budget.TimeoutCost(5))
		_, err := bucket.Withdraw(req, classify.Verdict{Decision: classify.Retry})
		require.NoError(t, err)
		resp, err := newTestTransport(base, 0.5, WithBudget(bucket)).RoundTrip(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Len(t, made, 1)
		assert.EqualValues(t, 1, made[0].closes.Load())
		assert.Equal(t, 1, base.count())
	})
}

func TestGetBodyFailureEndsRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := &script{steps: statuses(503)}
		req, _ := withBody(t, t.Context(), http.MethodPut, "http://svc.test/", "payload", false)
		req.GetBody = func() (io.ReadCloser, error) { return nil, errors.New("no rewind") }
		resp, err := newTestTransport(base, 0.5).RoundTrip(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		assert.Equal(t, 503, resp.StatusCode)
		assert.Equal(t, 1, base.count())
	})
}

func TestConnectionReusedAcrossThrottledRetries(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) <= 2 {
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, strings.Repeat("x", 1000)) // drained, so the connection survives
			return
		}
		io.WriteString(w, "ok")
	}))
	conns := startCountingConns(srv)
	defer srv.Close()

	var reused []bool
	var mu sync.Mutex
	trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
		mu.Lock()
		reused = append(reused, info.Reused)
		mu.Unlock()
	}}
	tr := New(WithThrottleBackoff(backoff.Constant(0)))
	defer tr.CloseIdleConnections()
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), http.MethodGet, srv.URL, nil)
	require.NoError(t, err)
	resp, err := tr.RoundTrip(req)
	require.NoError(t, err)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	assert.Equal(t, 200, resp.StatusCode)
	mu.Lock()
	assert.Equal(t, []bool{false, true, true}, reused, "GotConnInfo.Reused per attempt")
	mu.Unlock()
	assert.EqualValues(t, 1, conns.Load(), "connections the server saw")
}

// startCountingConns starts srv, counting the connections it accepts.
func startCountingConns(srv *httptest.Server) *atomic.Int32 {
	var conns atomic.Int32
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	return &conns
}

func TestOutageCostsOnlyTheRetriesConnections(t *testing.T) {
	// A failing dependency must not make the client churn connections: a
	// final response keeps its connection pooled, and once evidence.HostLeaveLimit
	// connections in a row have failed with no success at the host, the
	// host is down, not one of its instances: retries stay on their
	// connections, and leave one only after every evidence.ProbeGap failures (the
	// requests are sent at once: evidence.ProbeInterval never passes).
	var calls atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	conns := startCountingConns(srv)
	defer srv.Close()
	tr := New(WithBackoff(backoff.Constant(0)))
	defer tr.CloseIdleConnections()
	for range 50 {
		resp, err := tr.RoundTrip(get(t, srv.URL))
		require.NoError(t, err)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		require.Equal(t, 503, resp.StatusCode)
	}
	retries := int(calls.Load()) - 50
	assert.Positive(t, retries, "some requests were retried")
	want := 1 + evidence.HostLeaveLimit + (retries-evidence.HostLeaveLimit)/evidence.ProbeGap
	assert.Equal(t, int32(want), conns.Load(), "connections opened for %d calls", calls.Load())
}

type idleCounter struct {
	script
	closes atomic.Int32
}

func (c *idleCounter) CloseIdleConnections() { c.closes.Add(1) }

func TestCloseIdleConnectionsForwarded(t *testing.T) {
	base := &idleCounter{script: script{steps: statuses(200)}}
	client := &http.Client{Transport: New(WithBase(base))}
	client.CloseIdleConnections()
	assert.EqualValues(t, 1, base.closes.Load())
	// A failure never closes the pool on its own.
	synctest.Test(t, func(t *testing.T) {
		base.steps = []step{{err: dialRefused}}
		_, err := newTestTransport(base, 0.5).RoundTrip(get(t, "http://svc.test/"))
		require.Error(t, err)
	})
	assert.EqualValues(t, 1, base.closes.Load())
	// A base without the method is fine too.
	New(WithBase(rtFunc(func(*http.Request) (*http.Response, error) { return nil, nil }))).CloseIdleConnections()
}

// executionServer counts the requests it executes per method and idempotency
// key, failing the first fails of each with 503.
func executionServer(fails int) (*httptest.Server, *sync.Map) {
	var seen sync.Map // key -> *atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		key := r.Method + " " + r.URL.Path + " " + r.Header.Get("Idempotency-Key")
		n, _ := seen.LoadOrStore(key, new(atomic.Int32))
		if int(n.(*atomic.Int32).Add(1)) <= fails {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusCreated)
	}))
	return srv, &seen
}

func executions(seen *sync.Map) map[string]int {
	out := map[string]int{}
	seen.Range(func(k, v any) bool {
		out[k.(string)] = int(v.(*atomic.Int32).Load())
		return true
	})
	return out
}

func TestIdempotency(t *testing.T) {
	srv, seen := executionServer(2)
	defer srv.Close()
	tr := New(WithBackoff(backoff.Constant(0)))
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	do := func(method, path, key string) int {
		req, err := http.NewRequest(method, srv.URL+path, strings.NewReader("{}"))
		require.NoError(t, err)
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		resp, err := client.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	assert.Equal(t, 503, do(http.MethodPost, "/nokey", ""), "key-less POST gets the 503")
	assert.Equal(t, 503, do(http.MethodPatch, "/nokey", ""), "key-less PATCH gets the 503")
	assert.Equal(t, 201, do(http.MethodPost, "/key", "k1"))
	assert.Equal(t, 201, do(http.MethodPut, "/put", ""))
	assert.Equal(t, 201, do(http.MethodDelete, "/del", ""))
	assert.Equal(t, map[string]int{
		"POST /nokey ":  1,
		"PATCH /nokey ": 1,
		"POST /key k1":  3,
		"PUT /put ":     3,
		"DELETE /del ":  3,
	}, executions(seen))
}

func TestXIdempotencyKeyCounts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := &script{steps: statuses(503, 200)}
		req, _ := withBody(t, t.Context(), http.MethodPost, "http://svc.test/", "x", true)
		req.Header["X-Idempotency-Key"] = []string{"abc"}
		resp, err := newTestTransport(base, 0.5).RoundTrip(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, 2, base.count())
	})
}

func TestAutomaticIdempotencyKeys(t *testing.T) {
	srv, seen := executionServer(2)
	defer srv.Close()
	var keys []string
	var mu sync.Mutex
	base := rtFunc(func(r *http.Request) (*http.Response, error) {
		mu.Lock()
		keys = append(keys, r.Header.Get(idempotencyKeyHeader))
		mu.Unlock()
		return http.DefaultTransport.RoundTrip(r)
	})
	client := &http.Client{Transport: New(WithBase(base), WithIdempotencyKeys(), WithBackoff(backoff.Constant(0)))}
	for range 2 {
		resp, err := client.Post(srv.URL+"/auto", "application/json", strings.NewReader("{}"))
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, 201, resp.StatusCode)
	}
	require.Len(t, keys, 6)
	assert.Regexp(t, `^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`, keys[0])
	assert.Equal(t, []string{keys[0], keys[0], keys[0]}, keys[:3], "one key for every attempt of a request")
	assert.Equal(t, []string{keys[3], keys[3], keys[3]}, keys[3:], "one key for every attempt of a request")
	assert.NotEqual(t, keys[0], keys[3], "a fresh key per request")
	got := executions(seen)
	assert.Equal(t, 3, got["POST /auto "+keys[0]])
	// A GET gets no key, and a caller's key is kept.
	resp, err := client.Get(srv.URL + "/get")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Empty(t, keys[len(keys)-1])
}

func TestNeverSentPostIsRetried(t *testing.T) {
	// A refused dial proves the POST never reached the server.
	synctest.Test(t, func(t *testing.T) {
		base := &script{steps: []step{{err: dialRefused}, {status: 201}}}
		req, _ := withBody(t, t.Context(), http.MethodPost, "http://svc.test/", "x", true)
		resp, err := newTestTransport(base, 0.5).RoundTrip(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, 201, resp.StatusCode)
		assert.Equal(t, []string{"x", "x"}, base.bodies)
	})
	// A reset after the request was written may have executed it.
	synctest.Test(t, func(t *testing.T) {
		base := &script{steps: []step{{err: syscall.ECONNRESET}, {status: 201}}}
		req, _ := withBody(t, t.Context(), http.MethodPost, "http://svc.test/", "x", true)
		_, err := newTestTransport(base, 0.5).RoundTrip(req)
		assert.ErrorIs(t, err, syscall.ECONNRESET)
		assert.Equal(t, 1, base.count())
	})
}

func TestNeverSentToRealClosedPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now: every dial is refused
	var attempts atomic.Int32
	tr := New(WithBackoff(backoff.Constant(0)), WithOnRetry(func(RetryEvent) { attempts.Add(1) }))
	defer tr.CloseIdleConnections()
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/", strings.NewReader("x"))
	require.NoError(t, err)
	_, err = tr.RoundTrip(req)
	require.ErrorIs(t, err, syscall.ECONNREFUSED)
	assert.EqualValues(t, 2, attempts.Load(), "a refused POST is retried")
}

func TestRetryAfter(t *testing.T) {
	tests := []struct {
		name       string
		retryAfter string
		wantWait   time.Duration // least wait before attempt 2
		attempts   int
	}{
		{"seconds are a floor", "3", 3 * time.Second, 2},
		{"zero falls back to backoff", "0", 0, 2},
		{"garbage falls back to backoff", "soon", 0, 2},
		{"negative falls back to backoff", "-1", 0, 2},
		{"huge is not waited for", "99999999999999", 0, 1},
		{"year 9999 is not waited for", "Fri, 31 Dec 9999 23:59:59 GMT", 0, 1},
		{"over the limit is not waited for", "61", 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				base := &script{steps: []step{{status: 429, header: http.Header{"Retry-After": {tt.retryAfter}}}, {status: 200}}}
				start := time.Now()
				resp, err := newTestTransport(base, 0, WithMaxAttempts(2)).RoundTrip(get(t, "http://svc.test/"))
				require.NoError(t, err)
				resp.Body.Close()
				require.Equal(t, tt.attempts, base.count())
				if tt.attempts == 2 {
					assert.Equal(t, tt.wantWait, base.times[1].Sub(start), "wait with jitter at 0")
				} else {
					assert.Equal(t, tt.retryAfter, resp.Header.Get("Retry-After"), "header intact")
					assert.Zero(t, time.Since(start), "returned at once")
				}
			})
		})
	}
}

func TestRetryAfterHTTPDate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		when := time.Now().Add(10 * time.Second).UTC().Format(http.TimeFormat)
		base := &script{steps: []step{{status: 503, header: http.Header{"Retry-After": {when}}}, {status: 200}}}
		start := time.Now()
		resp, err := newTestTransport(base, 0).RoundTrip(get(t, "http://svc.test/"))
		require.NoError(t, err)
		resp.Body.Close()
		assert.GreaterOrEqual(t, base.times[1].Sub(start), 9*time.Second) // the date has whole seconds
		assert.LessOrEqual(t, base.times[1].Sub(start), 10*time.Second)
	})
}

func TestBackoffDelays(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := &script{steps: statuses(500, 502, 504, 200)}
		var delays []time.Duration
		tr := newTestTransport(base, 0.5, WithMaxAttempts(4), WithOnRetry(func(e RetryEvent) { delays = append(delays, e.Delay) }))
		start := time.Now()
		resp, err := tr.RoundTrip(get(t, "http://svc.test/"))
		require.NoError(t, err)
		resp.Body.Close()
		// Full jitter at r = 0.5 over 50 ms, 100 ms, 200 ms.
		want := []time.Duration{25 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond}
		assert.Equal(t, want, delays)
		assert.Equal(t, start.Add(25*time.Millisecond), base.times[1])
		assert.Equal(t, start.Add(75*time.Millisecond), base.times[2])
		assert.Equal(t, start.Add(175*time.Millisecond), base.times[3])
	})
}

func TestThrottleUsesThrottleBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := &script{steps: statuses(429, 200)}
		var ev RetryEvent
		tr := newTestTransport(base, 0.5, WithOnRetry(func(e RetryEvent) { ev = e }))
		resp, err := tr.RoundTrip(get(t, "http://svc.test/"))
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, 500*time.Millisecond, ev.Delay, "half of the 1 s throttle base")
		assert.True(t, ev.Verdict.Throttle)
		assert.Equal(t, 429, ev.StatusCode)
		assert.Equal(t, 1, ev.Attempt)
	})
}

func TestBudgetLimitsAmplification(t *testing.T) {
	// Against a dependency that is down, the default budget lets 100 retries
	// through (500 tokens at 5 each), then none: 1000 requests cost the
	// server about 1100 calls, not 3000.
	synctest.Test(t, func(t *testing.T) {
		base := &script{steps: statuses(503)}
		tr := newTestTransport(base, 0)
		for range 1000 {
			resp, err := tr.RoundTrip(get(t, "http://svc.test/"))
			require.NoError(t, err)
			resp.Body.Close()
		}
		assert.Equal(t, 1100, base.count())
		// Another host has its own bucket.
		resp, err := tr.RoundTrip(get(t, "http://other.test/"))
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, 1103, base.count())
	})
}

func TestSuccessRefillsBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bucket := budget.NewBucket(budget.Capacity(10))
		base := &script{steps: statuses(503, 200)}
		tr := newTestTransport(base, 0, WithBudget(bucket))
		resp, err := tr.RoundTrip(get(t, "http://svc.test/"))
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, 10*budget.Token, bucket.Balance(), "a successful retry refunds its cost")
	})
}

func TestDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		defer cancel()
		base := &script{steps: []step{{status: 503, header: http.Header{"Retry-After": {"5"}}}}}
		start := time.Now()
		resp, err := newTestTransport(base, 0).RoundTrip(get(t, "http://svc.test/").WithContext(ctx))
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, 1, base.count())
		assert.Zero(t, time.Since(start), "did not wait past the deadline")
		assert.Equal(t, "5", resp.Header.Get("Retry-After"))
	})
	synctest.Test(t, func(t *testing.T) {
		// Backoff that would cross the deadline returns the last result.
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		base := &script{steps: []step{{err: dialRefused}}}
		_, err := newTestTransport(base, 0, WithBackoff(backoff.Constant(2*time.Second))).RoundTrip(get(t, "http://svc.test/").WithContext(ctx))
		assert.ErrorIs(t, err, syscall.ECONNREFUSED)
		assert.Equal(t, 1, base.count())
	})
}

func TestCancelDuringWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		base := &script{steps: statuses(503)}
		tr := newTestTransport(base, 0, WithBackoff(backoff.Constant(time.Hour)))
		done := make(chan error)
		go func() {
			_, err := tr.RoundTrip(get(t, "http://svc.test/").WithContext(ctx))
			done <- err
		}()
		synctest.Wait() // the request is waiting to retry
		start := time.Now()
		cancel()
		err := <-done
		assert.ErrorIs(t, err, context.Canceled)
		assert.Zero(t, time.Since(start))
		assert.Equal(t, 1, base.count())
		base.requireDiscardedClosed(t, nil)
	})
}

func TestCallerCancellationNotRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		base := rtFunc(func(r *http.Request) (*http.Response, error) {
			cancel()
			return nil, r.Context().Err()
		})
		var n atomic.Int32
		tr := newTestTransport(rtFunc(func(r *http.Request) (*http.Response, error) { n.Add(1); return base(r) }), 0)
		_, err := tr.RoundTrip(get(t, "http://svc.test/").WithContext(ctx))
		assert.ErrorIs(t, err, context.Canceled)
		assert.EqualValues(t, 1, n.Load())
	})
}

// plainReader hides a reader's type so that http.NewRequest sets no GetBody.
type plainReader struct{ r io.Reader }

func (p *plainReader) Read(b []byte) (int, error) { return p.r.Read(b) }

func TestBodyWithoutGetBodyIsBuffered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := &script{steps: statuses(503, 503, 200)}
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPut, "http://svc.test/", &plainReader{strings.NewReader("0123456789")})
		require.NoError(t, err)
		require.Nil(t, req.GetBody)
		var lengths []int64
		tr := newTestTransport(rtFunc(func(r *http.Request) (*http.Response, error) {
			lengths = append(lengths, r.ContentLength)
			return base.RoundTrip(r)
		}), 0)
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, []string{"0123456789", "0123456789", "0123456789"}, base.bodies)
		assert.Equal(t, []int64{0, 10, 10}, lengths, "the first attempt sends the caller's body; its copy's length is known")
	})
}

// countingReader records how many bytes have been read from it.
type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n.Add(int64(n))
	return n, err
}

func TestBodyOverLimitStreamedOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const limit, size = 1 << 10, 1 << 20
		src := &countingReader{r: bytes.NewReader(bytes.Repeat([]byte("y"), size))}
		var readBeforeSend int64
		var lengths []int64
		base := &script{steps: statuses(503)}
		tr := newTestTransport(rtFunc(func(r *http.Request) (*http.Response, error) {
			readBeforeSend = src.n.Load()
			lengths = append(lengths, r.ContentLength)
			return base.RoundTrip(r)
		}), 0, WithBodyBufferLimit(limit))
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPut, "http://svc.test/", src)
		require.NoError(t, err)
		req.ContentLength = size
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, 503, resp.StatusCode)
		assert.Equal(t, 1, base.count(), "a streamed body is not retried")
		assert.Len(t, base.bodies[0], size, "the whole body reached the server")
		assert.LessOrEqual(t, readBeforeSend, int64(limit+1), "memory bounded by the limit")
		assert.Equal(t, []int64{size}, lengths)
	})
}

func TestBodyReadErrorIsReported(t *testing.T) {
	// A base reports an error reading the body, as net/http does; the copy
	// is incomplete, so the request is not resent.
	var attempts int
	base := rtFunc(func(r *http.Request) (*http.Response, error) {
		attempts++
		_, err := io.ReadAll(r.Body)
		r.Body.Close()
		return nil, err
	})
	src := &countingBody{Reader: io.MultiReader(strings.NewReader("ab"), iotestErrReader{})}
	req, err := http.NewRequest(http.MethodPut, "http://svc.test/", src)
	require.NoError(t, err)
	_, err = New(WithBase(base)).RoundTrip(req)
	assert.ErrorIs(t, err, errRead)
	assert.Equal(t, 1, attempts)
	assert.EqualValues(t, 1, src.closes.Load(), "the caller's body is closed once")
}

var errRead = errors.New("read failed")

type iotestErrReader struct{}

func (iotestErrReader) Read([]byte) (int, error) { return 0, errRead }

func TestOnRetryAndLogger(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs bytes.Buffer
		logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		base := &script{steps: []step{{err: urlErrorWithQuery}, {status: 502}, {status: 503}}}
		var events []RetryEvent
		tr := newTestTransport(base, 0, WithLogger(logger), WithOnRetry(func(e RetryEvent) { events = append(events, e) }))
		req := get(t, "http://user:secret@svc.test/path?token=secret")
		req.Header.Set("Authorization", "Bearer secret")
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Len(t, events, 2)
		assert.Equal(t, 1, events[0].Attempt)
		assert.Error(t, events[0].Err)
		assert.Equal(t, 0, events[0].StatusCode)
		assert.Equal(t, 2, events[1].Attempt)
		assert.Equal(t, 502, events[1].StatusCode)
		assert.Same(t, req, events[0].Request)
		out := logs.String()
		assert.Contains(t, out, `"msg":"retryhttp: retrying"`)
		assert.Contains(t, out, `"msg":"retryhttp: not retrying"`)
		assert.Contains(t, out, `"url":"http://svc.test/path"`)
		assert.NotContains(t, out, "secret")
	})
}

// urlErrorWithQuery is an error whose message repeats a secret query string.
var urlErrorWithQuery = &url.Error{Op: "Get", URL: "http://svc.test/path?token=secret", Err: syscall.ECONNRESET}

func mustURL(s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		panic(err)
	}
	return u
}

func TestHTTPMockSequence(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mock := httpmock.NewMockTransport()
		mock.RegisterResponder(http.MethodGet, "http://svc.test/items",
			httpmock.ResponderFromMultipleResponses([]*http.Response{
				httpmock.NewStringResponse(502, "bad gateway"),
				httpmock.NewStringResponse(429, "slow down"),
				httpmock.NewStringResponse(200, "items"),
			}))
		resp, err := newTestTransport(mock, 0).RoundTrip(get(t, "http://svc.test/items"))
		require.NoError(t, err)
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		assert.Equal(t, "items", string(body))
		assert.Equal(t, 3, mock.GetTotalCallCount())
		assert.Equal(t, 3, Attempts(resp))
	})
}

func TestConcurrentUse(t *testing.T) {
	srv, _ := executionServer(1)
	defer srv.Close()
	tr := New(WithBackoff(backoff.Constant(0)))
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	var wg sync.WaitGroup
	var ok atomic.Int32
	for i := range 16 {
		wg.Go(func() {
			for j := range 20 {
				resp, err := client.Get(fmt.Sprintf("%s/%d/%d", srv.URL, i, j))
				if err == nil {
					resp.Body.Close()
					if resp.StatusCode == 201 {
						ok.Add(1)
					}
				}
			}
		})
	}
	wg.Wait()
	assert.EqualValues(t, 320, ok.Load())
}

func TestDefaultBaseKeepsConcurrentConnections(t *testing.T) {
	// Two rounds of 16 requests, each round held at the server until all 16
	// are in flight, so each needs 16 connections at once. The second round
	// must find the first round's connections idle in the pool.
	const callers = 16
	var mu sync.Mutex
	arrived, release := 0, make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		arrived++
		if arrived == callers {
			close(release)
		}
		ch := release
		mu.Unlock()
		<-ch
	}))
	conns := startCountingConns(srv)
	defer srv.Close()
	tr := New()
	defer tr.CloseIdleConnections()
	for range 2 {
		mu.Lock()
		arrived, release = 0, make(chan struct{})
		mu.Unlock()
		var wg sync.WaitGroup
		for range callers {
			wg.Go(func() {
				resp, err := tr.RoundTrip(get(t, srv.URL))
				if assert.NoError(t, err) {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			})
		}
		wg.Wait()
	}
	assert.EqualValues(t, callers, conns.Load(), "connections opened over two rounds")
}

func TestVerdictRetryAfterIsAFloor(t *testing.T) {
	tests := []struct {
		name     string
		floor    time.Duration
		wantWait time.Duration
		attempts int
	}{
		{"a floor is waited for", 1500 * time.Millisecond, 1500 * time.Millisecond, 2},
		{"zero asks for nothing", 0, 0, 2},
		{"over the limit is not waited for", 2 * time.Minute, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				base := &script{steps: statuses(503, 200)}
				floor := classify.Func(func(_ *http.Request, resp *http.Response, _ error) classify.Verdict {
					if resp != nil && resp.StatusCode == 503 {
						return classify.Verdict{Decision: classify.Retry, RetryAfter: tt.floor}
					}
					return classify.Verdict{}
				})
				start := time.Now()
				resp, err := newTestTransport(base, 0, WithClassifier(classify.First(floor, classify.Default()))).RoundTrip(get(t, "http://svc.test/"))
				require.NoError(t, err)
				resp.Body.Close()
				require.Equal(t, tt.attempts, base.count())
				if tt.attempts == 2 {
					assert.Equal(t, tt.wantWait, base.times[1].Sub(start))
				} else {
					assert.Equal(t, 503, resp.StatusCode)
				}
			})
		})
	}
}

func TestStalledDiscardedBodyDoesNotBlock(t *testing.T) {
	// A 503 whose body stalls mid-way is discarded before the retry: the
	// drain gives up on the connection instead of waiting for the body.
	stop := make(chan struct{})
	srv := newRawServer(t, func(c net.Conn, n int) {
		if n == 1 {
			io.WriteString(c, "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 100\r\n\r\npartial")
			<-stop // the rest never comes
			return
		}
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
	})
	t.Cleanup(func() { close(stop) }) // runs before the server's cleanup
	tr := New(WithBackoff(backoff.Constant(0)))
	defer tr.CloseIdleConnections()
	// The deadline only bounds the test if the drain blocked.
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.url(), nil)
	require.NoError(t, err)
	resp, err := tr.RoundTrip(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, 200, resp.StatusCode)
	assert.EqualValues(t, 2, srv.requests.Load())
}

// stalledThenOK answers its first request with status and the stalled
// body, and the others with 200.
func stalledThenOK(status int, stalled *stallingBody) http.RoundTripper {
	var n int
	return rtFunc(func(r *http.Request) (*http.Response, error) {
		n++
		if n == 1 {
			return &http.Response{StatusCode: status, Header: http.Header{}, Body: stalled}, nil
		}
		return &http.Response{StatusCode: 200, Header: http.Header{}, Body: http.NoBody}, nil
	})
}

func TestStalledDiscardedBodyInMemory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		stalled := &stallingBody{closed: make(chan struct{})}
		base := stalledThenOK(429, stalled)
		start := time.Now()
		resp, err := newTestTransport(base, 0).RoundTrip(get(t, "http://svc.test/"))
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, 200, resp.StatusCode)
		assert.Equal(t, attempt.DrainTimeout, time.Since(start), "the drain waited its limit, then closed the body")
	})
}

func TestFailedBodyClosedUnread(t *testing.T) {
	// A 5xx about to be retried is closed at once, unread, so that its
	// connection is not pooled for the retry: a body that stalls costs no
	// wait.
	synctest.Test(t, func(t *testing.T) {
		stalled := &stallingBody{closed: make(chan struct{})}
		base := stalledThenOK(503, stalled)
		start := time.Now()
		resp, err := newTestTransport(base, 0).RoundTrip(get(t, "http://svc.test/"))
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, 200, resp.StatusCode)
		assert.Zero(t, time.Since(start), "closed without a wait")
		<-stalled.closed
	})
}

// stallingBody blocks every Read until it is closed, as a response body
// whose server stopped sending does.
type stallingBody struct {
	closed chan struct{}
	once   sync.Once
}

func (b *stallingBody) Read([]byte) (int, error) {
	<-b.closed
	return 0, net.ErrClosed
}

func (b *stallingBody) Close() error {
	b.once.Do(func() { close(b.closed) })
	return nil
}

func TestCancelledWaitRefundsBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bucket := budget.NewBucket(budget.Capacity(10))
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		base := &script{steps: statuses(503, 200)}
		// The hook runs after the retry was paid for, before its wait.
		tr := newTestTransport(base, 1, WithBudget(bucket), WithOnRetry(func(RetryEvent) {
			assert.Equal(t, 5*budget.Token, bucket.Balance(), "paid")
			cancel()
		}))
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://svc.test/", nil)
		require.NoError(t, err)
		_, err = tr.RoundTrip(req)
		require.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, 1, base.count(), "the retry was never sent")
		assert.Equal(t, 10*budget.Token, bucket.Balance(), "its tokens are back")
	})
}

func TestOnlyHealthyResponsesRefillBudget(t *testing.T) {
	tests := []struct {
		name    string
		step    step
		refills bool
	}{
		{"200", step{status: 200}, true},
		{"304", step{status: 304}, true},
		{"404", step{status: 404}, true},
		{"429", step{status: 429}, false},
		{"408", step{status: 408}, false},
		{"503", step{status: 503}, false},
		{"400 marked not to retry", step{status: 400, header: http.Header{"X-Should-Retry": {"false"}}}, false},
		{"200 marked not to retry", step{status: 200, header: http.Header{"X-Should-Retry": {"false"}}}, true},
		{"error", step{err: dialRefused}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bucket := budget.NewBucket(budget.Capacity(10))
			for range 2 {
				_, err := bucket.Withdraw(nil, classify.Verdict{Decision: classify.Retry})
				require.NoError(t, err)
			}
			require.Zero(t, bucket.Balance())
			tr := newTestTransport(&script{steps: []step{tt.step}}, 0, WithBudget(bucket), WithMaxAttempts(1))
			resp, err := tr.RoundTrip(get(t, "http://svc.test/"))
			if err == nil {
				resp.Body.Close()
			}
			want := budget.Millitokens(0)
			if tt.refills {
				want = budget.Token
			}
			assert.Equal(t, want, bucket.Balance())
		})
	}
}

// TestZeroTransport checks that a zero Transport works as New() does, from
// several goroutines at once: each request's 503 is retried, and the
// retry's 200 returned.
func TestZeroTransport(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.URL.Path]++
		n := seen[r.URL.Path]
		mu.Unlock()
		if n == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()

	var tr Transport
	defer tr.CloseIdleConnections()
	const callers = 8
	var codes, attempts [callers]int
	var wg sync.WaitGroup
	for g := range callers {
		wg.Go(func() {
			resp, err := tr.RoundTrip(get(t, srv.URL+"/"+strconv.Itoa(g)))
			if !assert.NoError(t, err) {
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			codes[g], attempts[g] = resp.StatusCode, Attempts(resp)
		})
	}
	wg.Wait()
	for g := range callers {
		assert.Equal(t, http.StatusOK, codes[g], "caller %d", g)
		assert.Equal(t, 2, attempts[g], "caller %d", g)
	}
	made := tr.ready()
	assert.Same(t, made, tr.ready(), "one Transport is made")
	assert.Equal(t, defaultMaxAttempts, made.maxAttempts)
	assert.Same(t, made.Budget(), tr.Budget())
}

// TestZeroTransportMethods calls each exported method on a zero Transport
// not used before.
func TestZeroTransportMethods(t *testing.T) {
	tests := map[string]func(t *testing.T, tr *Transport){
		"CloseIdleConnections": func(_ *testing.T, tr *Transport) { tr.CloseIdleConnections() },
		"Budget": func(t *testing.T, tr *Transport) {
			assert.IsType(t, &budget.PerHost{}, tr.Budget())
		},
		"Rejections": func(t *testing.T, tr *Transport) {
			for r := range tr.Rejections() {
				t.Errorf("rejection without throttling: %+v", r)
			}
		},
		"RoundTrip": func(t *testing.T, tr *Transport) {
			_, err := tr.RoundTrip(&http.Request{Method: http.MethodGet})
			assert.ErrorContains(t, err, "nil Request.URL")
		},
	}
	for name, call := range tests {
		t.Run(name, func(t *testing.T) {
			assert.NotPanics(t, func() { call(t, &Transport{}) })
		})
	}
}
