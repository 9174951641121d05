package retryhttp

import (
	"bufio"
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
	"time"

	"github.com/retryhttp/retryhttp/backoff"
	"github.com/retryhttp/retryhttp/internal/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp/internal/guard"
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
	tr := New(WithBackoff(backoff.Constant(0)), WithOnRetry(func(RetryEvent) {
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
	tr := New(WithBase(srv.Client().Transport), WithBackoff(backoff.Constant(0)))
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
	tr := New(WithBackoff(backoff.Constant(0)))
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
	tr := New(WithBackoff(backoff.Constant(0)))
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
	_, err := New(WithBase(base), WithBackoff(backoff.Constant(0))).RoundTrip(req)
	require.Error(t, err)
	assert.Equal(t, 1, base.count())
}

func TestGuardProvedUnsent(t *testing.T) {
	var nilGuard *guard.Guard
	assert.False(t, nilGuard.ProvedUnsent())
	assert.False(t, nilGuard.GotConn())
	assert.False(t, nilGuard.StoppedResend())
	nilGuard.End()

	g, ctx := guard.Start(context.Background(), guard.Base{})
	defer g.End()
	assert.False(t, g.ProvedUnsent(), "no evidence yet")
	ct := httptrace.ContextClientTrace(ctx)
	ct.GetConn("x:1")
	assert.True(t, g.ProvedUnsent(), "asked for a connection, obtained none")
	ct.GotConn(httptrace.GotConnInfo{})
	assert.False(t, g.ProvedUnsent(), "a connection was obtained")
	assert.NoError(t, ctx.Err(), "one send is allowed")
	ct.GotConn(httptrace.GotConnInfo{})
	assert.True(t, g.StoppedResend())
	assert.ErrorIs(t, context.Cause(ctx), ErrResendStopped, "a second send is stopped before it writes")
}

// TestNeverSentFigures measures, for key-less POSTs against each kind of
// failure, how many attempts were made, how often the server executed the
// request, and how many requests succeeded; docs/decisions.md quotes its
// table.
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
		tr := New(WithBase(srv.Client().Transport), WithBackoff(backoff.Constant(0)))
		return srv.URL, &http.Client{Transport: tr}, h, func() { drop.n.Store(1) }, srv.Close
	})
	run("connection reset before the server reads", func() (string, *http.Client, *countingHandler, func(), func()) {
		h := &countingHandler{}
		srv := httptest.NewUnstartedServer(h)
		drop := &dropFirst{Listener: srv.Listener}
		srv.Listener = drop
		srv.Start()
		tr := New(WithBackoff(backoff.Constant(0)))
		return srv.URL, &http.Client{Transport: tr}, h, func() { drop.n.Store(1) }, srv.Close
	})
	run("connection reset after the server reads", func() (string, *http.Client, *countingHandler, func(), func()) {
		h := &countingHandler{}
		srv := httptest.NewServer(resetAfterRead(h))
		tr := New(WithBackoff(backoff.Constant(0)))
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

// rawServer is an HTTP/1 server on a real loopback socket that parses each
// request (its body included) and then lets answer write whatever bytes it
// likes to the connection, or nothing. It counts the requests it read: each
// one a server would execute.
type rawServer struct {
	ln       net.Listener
	answer   func(c net.Conn, n int) // n counts requests from 1
	requests atomic.Int32
	wg       sync.WaitGroup
	mu       sync.Mutex
	conns    []net.Conn
}

func newRawServer(t *testing.T, answer func(c net.Conn, n int)) *rawServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := &rawServer{ln: ln, answer: answer}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns = append(s.conns, c)
			s.mu.Unlock()
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					io.Copy(io.Discard, req.Body)
					s.answer(c, int(s.requests.Add(1)))
				}
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		s.mu.Lock()
		for _, c := range s.conns {
			c.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
	})
	return s
}

func (s *rawServer) url() string { return "http://" + s.ln.Addr().String() + "/orders" }

// keylessPost sends one POST without an idempotency key through tr.
func keylessPost(t *testing.T, ctx context.Context, tr http.RoundTripper, url string, body io.Reader) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, body)
	require.NoError(t, err)
	resp, err := tr.RoundTrip(req)
	if resp != nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	return resp, err
}

func TestServerTextNeverProvesUnsent(t *testing.T) {
	// An HTTP/1 server that ran the POST answers with a status line that
	// names REFUSED_STREAM: its text reaches the error, and must not count
	// as the HTTP/2 promise that the request was not processed.
	srv := newRawServer(t, func(c net.Conn, _ int) {
		io.WriteString(c, "HTTP/1.1 REFUSED_STREAM\r\n\r\n")
		c.Close()
	})
	tr := New(WithBackoff(backoff.Constant(0)))
	defer tr.CloseIdleConnections()
	_, err := keylessPost(t, t.Context(), tr, srv.url(), strings.NewReader(`{"order":1}`))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "REFUSED_STREAM", "the server's text is in the error")
	assert.EqualValues(t, 1, srv.requests.Load(), "executed once")
}

func TestGoAwayNeverProvesUnsent(t *testing.T) {
	// A GOAWAY whose last stream ID covers the request says the server may
	// have processed it, whatever its code or debug data say.
	tests := []struct {
		name  string
		code  uint32
		debug string
	}{
		{"REFUSED_STREAM code", wire.H2RefusedStream, ""},
		{"NO_ERROR with debug data naming REFUSED_STREAM", h2NoError, "REFUSED_STREAM"},
		{"PROTOCOL_ERROR", h2ProtocolError, "stream error: REFUSED_STREAM"},
	}
	bodies := []struct {
		name string
		body func() io.Reader
	}{
		{"no body", func() io.Reader { return nil }},
		{"body with GetBody", func() io.Reader { return strings.NewReader(`{"order":1}`) }},
		{"body without GetBody", func() io.Reader { return &plainReader{strings.NewReader(`{"order":1}`)} }},
	}
	for _, tt := range tests {
		for _, b := range bodies {
			t.Run(tt.name+"/"+b.name, func(t *testing.T) {
				srv := newH2Server(t, func(c *h2Conn, id uint32, _ int) {
					c.goAway(id, tt.code, tt.debug)
					c.Close()
				}).start()
				tr := New(WithBase(h2cTransport()), WithBackoff(backoff.Constant(0)))
				defer tr.CloseIdleConnections()
				_, err := keylessPost(t, t.Context(), tr, srv.url(), b.body())
				require.Error(t, err)
				assert.Equal(t, 1, srv.received(), "sent once")
			})
		}
	}
}

func TestBaseNeverResendsGuardedRequest(t *testing.T) {
	// net/http's HTTP/2 transport resends a request after a PROTOCOL_ERROR
	// reset when it has no body or a GetBody, on a new connection each
	// time. The server may have processed it: a request that may not be
	// sent twice is sent once, whatever its body, and the caller is told
	// the resend was stopped.
	bodies := []struct {
		name string
		body func() io.Reader
	}{
		{"no body", func() io.Reader { return nil }},
		{"body with GetBody", func() io.Reader { return strings.NewReader(`{"order":1}`) }},
		{"body without GetBody", func() io.Reader { return &plainReader{strings.NewReader(`{"order":1}`)} }},
	}
	for _, b := range bodies {
		t.Run(b.name, func(t *testing.T) {
			srv := newH2Server(t, func(c *h2Conn, id uint32, _ int) { c.reset(id, h2ProtocolError) }).start()
			tr := New(WithBase(h2cTransport()), WithBackoff(backoff.Constant(0)))
			defer tr.CloseIdleConnections()
			// net/http's own resends wait seconds between them; the
			// deadline bounds the test if they were not stopped.
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			_, err := keylessPost(t, ctx, tr, srv.url(), b.body())
			assert.ErrorIs(t, err, ErrResendStopped)
			assert.Equal(t, 1, srv.received(), "sent once")
		})
	}
	t.Run("an idempotent request is still resent by net/http", func(t *testing.T) {
		srv := newH2Server(t, func(c *h2Conn, id uint32, n int) {
			if n == 1 {
				c.reset(id, h2ProtocolError)
				return
			}
			c.respond(id)
		}).start()
		tr := New(WithBase(h2cTransport()), WithMaxAttempts(1))
		defer tr.CloseIdleConnections()
		resp, err := tr.RoundTrip(get(t, srv.url()))
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, 2, srv.received())
	})
}

func TestStalledHeadersNotResent(t *testing.T) {
	// An overloaded HTTP/2 server stops reading while a key-less POST's
	// header block is being written. The attempt times out with the block
	// stuck in the socket; net/http's writer goes on writing it after
	// RoundTrip returns. The POST must not be sent again: a connection was
	// obtained for it, which is all that can be known.
	release := make(chan struct{})
	releaseOnce := sync.OnceFunc(func() { close(release) })
	srv := newH2Server(t, nil)
	t.Cleanup(releaseOnce) // runs before the server's cleanup, even if the test fails early
	srv.onAccept = func(c *h2Conn) {
		// One stream per connection, so that a resend would take a
		// connection of its own rather than queue behind the stuck one.
		c.writeFrame(frameSettings, 0, 0, []byte{0, 3, 0, 0, 0, 1}) // MAX_CONCURRENT_STREAMS
		<-release                                                   // read nothing until the client has given up
	}
	srv.start()
	base := h2cTransport()
	base.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err == nil {
			c.(*net.TCPConn).SetWriteBuffer(4 << 10)
		}
		return c, err
	}
	tr := New(WithBase(base), WithBackoff(backoff.Constant(0)), WithAttemptTimeout(200*time.Millisecond))
	defer tr.CloseIdleConnections()
	req, err := http.NewRequest(http.MethodPost, srv.url(), nil)
	require.NoError(t, err)
	req.Header.Set("X-Large", strings.Repeat("x", 8<<20)) // far more than the socket buffers hold
	_, err = tr.RoundTrip(req)
	require.ErrorIs(t, err, ErrAttemptTimeout)
	releaseOnce()
	// The stuck block now reaches the server, and so would a resend's,
	// each on a connection of its own.
	require.True(t, srv.waitSettled(30*time.Second), "every connection delivered its header block")
	assert.Equal(t, 1, srv.received(), "sent once")
}
