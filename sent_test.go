package retryhttp

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// countingHandler executes key-less POSTs and counts the executions.
type countingHandler struct{ executions atomic.Int32 }

func (h *countingHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	h.executions.Add(1)
	w.WriteHeader(http.StatusCreated)
}

// dropFirst wraps a listener so that its first n accepted connections are
// reset, before any request is read from them. With readFirst, each is
// reset only after the client's first bytes (a TLS ClientHello) arrive, so
// that the client has surely finished connecting.
type dropFirst struct {
	net.Listener
	n         atomic.Int32
	readFirst bool
}

func (l *dropFirst) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil || l.n.Add(-1) < 0 {
			return c, err
		}
		if l.readFirst {
			c.Read(make([]byte, 1))
		}
		c.(*net.TCPConn).SetLinger(0)
		c.Close()
	}
}

// resetAfterRead executes the request, then resets the connection instead
// of answering: the client cannot tell whether the POST took effect.
func resetAfterRead(h *countingHandler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		h.executions.Add(1)
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			panic(err)
		}
		conn.(*net.TCPConn).SetLinger(0)
		conn.Close()
	})
}

// neverSentCase runs one key-less POST against a misbehaving server and
// reports what happened.
type neverSentResult struct {
	attempts   int
	executions int
	err        error
}

func postOnce(t *testing.T, url string, client *http.Client, h *countingHandler) neverSentResult {
	t.Helper()
	var attempts atomic.Int32
	trace := &httptrace.ClientTrace{GetConn: func(string) { attempts.Add(1) }}
	ctx := httptrace.WithClientTrace(context.Background(), trace)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(`{"order":1}`))
	require.NoError(t, err)
	resp, err := client.Transport.RoundTrip(req)
	if resp != nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	return neverSentResult{attempts: int(attempts.Load()), executions: int(h.executions.Swap(0)), err: err}
}

func TestNeverSentPostRefusedDial(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	h := &countingHandler{}
	var srv *httptest.Server
	var once sync.Once
	// Nothing listens on addr for the first attempt; the server starts there
	// before the retry.
	tr := New(WithBackoff(Constant(0)), WithOnRetry(func(RetryEvent) {
		once.Do(func() {
			l, err := net.Listen("tcp", addr)
			if err != nil {
				panic(err)
			}
			srv = &httptest.Server{Listener: l, Config: &http.Server{Handler: h}}
			srv.Start()
		})
	}))
	defer tr.CloseIdleConnections()
	got := postOnce(t, "http://"+addr+"/", &http.Client{Transport: tr}, h)
	require.NotNil(t, srv, "the POST was retried")
	defer srv.Close()
	require.NoError(t, got.err)
	assert.Equal(t, 2, got.attempts)
	assert.Equal(t, 1, got.executions)
}

func TestNeverSentPostDroppedBeforeWrite(t *testing.T) {
	// The connection is reset during the TLS handshake: no byte of the
	// request can have been written, though the dial succeeded.
	h := &countingHandler{}
	srv := httptest.NewUnstartedServer(h)
	drop := &dropFirst{Listener: srv.Listener, readFirst: true}
	drop.n.Store(1)
	srv.Listener = drop
	srv.StartTLS()
	defer srv.Close()
	tr := New(WithBase(srv.Client().Transport), WithBackoff(Constant(0)))
	defer tr.CloseIdleConnections()
	got := postOnce(t, srv.URL, &http.Client{Transport: tr}, h)
	require.NoError(t, got.err)
	assert.Equal(t, 2, got.attempts)
	assert.Equal(t, 1, got.executions)
}

func TestSentPostResetAfterReadNotRetried(t *testing.T) {
	h := &countingHandler{}
	srv := httptest.NewServer(resetAfterRead(h))
	defer srv.Close()
	tr := New(WithBackoff(Constant(0)))
	defer tr.CloseIdleConnections()
	got := postOnce(t, srv.URL, &http.Client{Transport: tr}, h)
	require.Error(t, got.err)
	assert.Equal(t, 1, got.attempts, "a POST that may have executed is not resent")
	assert.Equal(t, 1, got.executions)
}

func TestSentPostResetBeforeReadNeverDuplicated(t *testing.T) {
	// The server resets the connection before reading: whether the client
	// had written the request by then is a race it cannot see, so it may
	// retry only when it provably had not. Either way the POST executes at
	// most once, and succeeds exactly when it executes.
	h := &countingHandler{}
	srv := httptest.NewUnstartedServer(h)
	drop := &dropFirst{Listener: srv.Listener}
	srv.Listener = drop
	srv.Start()
	defer srv.Close()
	tr := New(WithBackoff(Constant(0)))
	defer tr.CloseIdleConnections()
	for range 20 {
		drop.n.Store(1)
		got := postOnce(t, srv.URL, &http.Client{Transport: tr}, h)
		assert.LessOrEqual(t, got.executions, 1)
		assert.Equal(t, got.err == nil, got.executions == 1, "success iff executed: %v", got.err)
		tr.CloseIdleConnections() // a fresh connection for the next round
	}
}

func TestTracedRequestKeepsCallerTrace(t *testing.T) {
	srv := httptest.NewServer(&countingHandler{})
	defer srv.Close()
	var gotConn, wrote atomic.Int32
	trace := &httptrace.ClientTrace{
		GotConn:      func(httptrace.GotConnInfo) { gotConn.Add(1) },
		WroteHeaders: func() { wrote.Add(1) },
	}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), http.MethodPost, srv.URL, strings.NewReader("x"))
	require.NoError(t, err)
	tr := New()
	defer tr.CloseIdleConnections()
	resp, err := tr.RoundTrip(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.EqualValues(t, 1, gotConn.Load(), "caller's GotConn hook")
	assert.EqualValues(t, 1, wrote.Load(), "caller's WroteHeaders hook")
}

func TestNoTraceEvidenceMeansSent(t *testing.T) {
	// A base that does not report through httptrace proves nothing: a
	// key-less POST that failed with a reset is not resent.
	base := &script{steps: []step{{err: &net.OpError{Op: "read", Err: io.ErrUnexpectedEOF}}, {status: 201}}}
	req, _ := withBody(t, context.Background(), http.MethodPost, "http://svc.test/", "x", true)
	_, err := New(WithBase(base), WithBackoff(Constant(0))).RoundTrip(req)
	require.Error(t, err)
	assert.Equal(t, 1, base.count())
}

func TestSendTraceProvedUnsent(t *testing.T) {
	var nilTrace *sendTrace
	assert.False(t, nilTrace.provedUnsent())
	nilTrace.release()
	s, ctx := startSendTrace(context.Background())
	assert.False(t, s.provedUnsent(), "no evidence yet")
	ct := httptrace.ContextClientTrace(ctx)
	ct.GetConn("x:1")
	assert.True(t, s.provedUnsent(), "asked for a connection, wrote nothing")
	ct.WroteHeaders()
	assert.False(t, s.provedUnsent(), "headers written")
	s.release()
	s2, _ := startSendTrace(context.Background())
	assert.False(t, s2.asked.Load() || s2.wrote.Load(), "a pooled trace starts clean")
	s2.release()
}

// TestNeverSentFigures measures, for key-less POSTs against each kind of
// failure, how many attempts were made, how often the server executed the
// request, and how many requests succeeded; the README quotes its table.
func TestNeverSentFigures(t *testing.T) {
	const rounds = 50
	type row struct {
		name                            string
		attempts, executions, successes int
	}
	var rows []row
	run := func(name string, setup func() (url string, client *http.Client, h *countingHandler, before func(), done func())) {
		url, client, h, before, done := setup()
		defer done()
		r := row{name: name}
		for range rounds {
			before()
			got := postOnce(t, url, client, h)
			r.attempts += got.attempts
			r.executions += got.executions
			if got.err == nil {
				r.successes++
			}
			require.LessOrEqual(t, got.executions, 1, "%s: executed twice", name)
			client.CloseIdleConnections()
		}
		rows = append(rows, r)
	}
	run("connection reset during TLS handshake", func() (string, *http.Client, *countingHandler, func(), func()) {
		h := &countingHandler{}
		srv := httptest.NewUnstartedServer(h)
		drop := &dropFirst{Listener: srv.Listener, readFirst: true}
		srv.Listener = drop
		srv.StartTLS()
		tr := New(WithBase(srv.Client().Transport), WithBackoff(Constant(0)))
		return srv.URL, &http.Client{Transport: tr}, h, func() { drop.n.Store(1) }, srv.Close
	})
	run("connection reset before the server reads", func() (string, *http.Client, *countingHandler, func(), func()) {
		h := &countingHandler{}
		srv := httptest.NewUnstartedServer(h)
		drop := &dropFirst{Listener: srv.Listener}
		srv.Listener = drop
		srv.Start()
		tr := New(WithBackoff(Constant(0)))
		return srv.URL, &http.Client{Transport: tr}, h, func() { drop.n.Store(1) }, srv.Close
	})
	run("connection reset after the server reads", func() (string, *http.Client, *countingHandler, func(), func()) {
		h := &countingHandler{}
		srv := httptest.NewServer(resetAfterRead(h))
		tr := New(WithBackoff(Constant(0)))
		return srv.URL, &http.Client{Transport: tr}, h, func() {}, srv.Close
	})
	var b strings.Builder
	fmt.Fprintf(&b, "\n| key-less POST, %d requests | attempts per request | executions per request | succeeded |\n| --- | --- | --- | --- |\n", rounds)
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %.2f | %.2f | %d%% |\n", r.name, float64(r.attempts)/rounds, float64(r.executions)/rounds, r.successes*100/rounds)
	}
	t.Log(b.String())
	assert.Equal(t, rounds, rows[0].successes, "a POST cut off before its headers is retried")
	assert.Equal(t, rounds, rows[2].executions, "a POST reset after reading runs once")
	assert.Equal(t, 0, rows[2].successes, "and is not resent")
}
