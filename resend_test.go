package retryhttp

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/retryhttp/retryhttp/backoff"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp/internal/replay"
)

// closeCounter is a connection that counts its Close calls.
type closeCounter struct {
	net.Conn
	closes atomic.Int32
}

func (c *closeCounter) Close() error {
	c.closes.Add(1)
	return nil
}

func TestGuardLetsThroughOnlyProvedResends(t *testing.T) {
	c1, c2 := &closeCounter{}, &closeCounter{}
	type send struct {
		from string
		conn *closeCounter
	}
	tests := []struct {
		name  string
		sends []send
		stop  bool // the last send is stopped
	}{
		{"one send", []send{{http1GetConn, c1}}, false},
		{"HTTP/1 resend, which follows a send that wrote nothing", []send{{http1GetConn, c1}, {http1GetConn, c2}}, false},
		{"HTTP/1 resend that goes out over HTTP/2", []send{{http1GetConn, c1}, {http2GotConn, c2}}, false},
		{"HTTP/2 resend on the same connection: REFUSED_STREAM", []send{{http2GotConn, c1}, {http2GotConn, c1}}, false},
		{"HTTP/2 resend on another connection", []send{{http2GotConn, c1}, {http2GotConn, c2}}, true},
		{"HTTP/2 send handed to HTTP/1", []send{{http2GotConn, c1}, {http1GetConn, c2}}, true},
		{"a base other than net/http's", []send{{"example.com/rt.(*T).RoundTrip", c1}, {"example.com/rt.(*T).RoundTrip", c1}}, true},
		{"net/http after another base", []send{{"example.com/rt.(*T).RoundTrip", c1}, {http1GetConn, c2}}, true},
		{"three sends on one HTTP/2 connection", []send{{http2GotConn, c1}, {http2GotConn, c1}, {http2GotConn, c1}}, false},
		{"HTTP/2 resend after an HTTP/1 one", []send{{http1GetConn, c1}, {http2GotConn, c2}, {http2GotConn, c1}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c1.closes.Store(0)
			c2.closes.Store(0)
			g, ctx := startGuard(context.Background())
			defer g.end()
			for i, s := range tt.sends {
				g.obtainedFrom(s.from, s.conn)
				if i < len(tt.sends)-1 {
					require.NoError(t, ctx.Err(), "send %d", i+1)
				}
			}
			last := tt.sends[len(tt.sends)-1]
			assert.Equal(t, tt.stop, g.stoppedResend())
			if tt.stop {
				assert.ErrorIs(t, context.Cause(ctx), ErrResendStopped)
			} else {
				assert.NoError(t, ctx.Err())
			}
			wantCloses := 0
			if tt.stop && last.from == http1GetConn {
				wantCloses = 1 // net/http's HTTP/1 write loop would not see the cancel
			}
			assert.EqualValues(t, wantCloses, last.conn.closes.Load(), "closes of the stopped send's connection")
		})
	}
}

func TestHookCallerSeesThroughThisPackage(t *testing.T) {
	var got string
	hook := func() { got = hookCaller() }
	func() { hook() }()
	assert.Equal(t, "testing.tRunner", got, "the first caller outside this package, httptrace, reflect and runtime")
}

func TestUnreplayable(t *testing.T) {
	tests := []struct {
		name string
		in   http.Header
		want http.Header
	}{
		{"no key entry", http.Header{"Content-Type": {"a"}}, http.Header{"Content-Type": {"a"}}},
		{"blank Idempotency-Key", http.Header{"Idempotency-Key": {""}}, http.Header{"idempotency-key": {""}}},
		{"blank X-Idempotency-Key", http.Header{"X-Idempotency-Key": {"  "}}, http.Header{"x-idempotency-key": {"  "}}},
		{"both", http.Header{"Idempotency-Key": {" "}, "X-Idempotency-Key": {"\t"}, "Accept": {"b"}},
			http.Header{"idempotency-key": {" "}, "x-idempotency-key": {"\t"}, "Accept": {"b"}}},
		{"joined with a lower-case entry", http.Header{"Idempotency-Key": {""}, "idempotency-key": {"x"}},
			http.Header{"idempotency-key": {"x", ""}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.in.Clone()
			got := unreplayable(tt.in)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, before, tt.in, "the caller's header is not modified")
			assert.False(t, keyEntryOf(got), "net/http does not call the request replayable")
		})
	}
}

// keyEntryOf reports whether h has an entry by which net/http's
// Request.isReplayable calls a POST replayable.
func keyEntryOf(h http.Header) bool {
	_, a := h["Idempotency-Key"]
	_, b := h["X-Idempotency-Key"]
	return a || b
}

func TestGuardHeader(t *testing.T) {
	keyed := http.Header{"Idempotency-Key": {"k-1"}}
	declared := http.Header{"Idempotency-Key": nil}
	blank := http.Header{"Idempotency-Key": {" "}}
	for _, tt := range []struct {
		name    string
		h       http.Header
		once    bool
		guarded bool
		want    http.Header
	}{
		{"idempotent or declared resendable", blank, false, false, blank},
		{"a key", keyed, true, false, keyed},
		{"a key entry without values", declared, true, false, declared},
		{"no key", http.Header{}, true, true, http.Header{}},
		{"a blank key", blank, true, true, http.Header{"idempotency-key": {" "}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			guarded, h := guardHeader(tt.h, tt.once)
			assert.Equal(t, tt.guarded, guarded)
			assert.Equal(t, tt.want, h)
		})
	}
}

func TestBlankKeyReachesTheServer(t *testing.T) {
	// The blank key travels under its lower-case name: the server reads
	// the same field, and net/http does not call the POST replayable.
	heads := make(chan string, 1)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		br := bufio.NewReader(c)
		var head strings.Builder
		for {
			line, err := br.ReadString('\n')
			if err != nil || line == "\r\n" {
				break
			}
			head.WriteString(line)
		}
		heads <- head.String()
		io.WriteString(c, "HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n")
	}()
	tr := New()
	defer tr.CloseIdleConnections()
	req, err := http.NewRequest(http.MethodPost, "http://"+ln.Addr().String()+"/orders", nil)
	require.NoError(t, err)
	req.Header["Idempotency-Key"] = []string{" "}
	resp, err := tr.RoundTrip(req)
	require.NoError(t, err)
	resp.Body.Close()
	head := <-heads
	assert.Contains(t, head, "\r\nidempotency-key: \r\n")
	assert.NotContains(t, head, "Idempotency-Key")
	assert.Equal(t, []string{" "}, req.Header["Idempotency-Key"], "the caller's request is not modified")
}

// sourceFunc is a replay.Source of a test's.
type sourceFunc func() (io.ReadCloser, error)

func (f sourceFunc) Resend() (io.ReadCloser, error) { return f() }

func TestLazyBody(t *testing.T) {
	var asked int
	src := sourceFunc(func() (io.ReadCloser, error) {
		asked++
		return newCountingBody("order"), nil
	})
	t.Run("closed unread: the source is never asked", func(t *testing.T) {
		asked = 0
		b := &lazyBody{src: src}
		require.NoError(t, b.Close())
		_, err := b.Read(make([]byte, 8))
		assert.ErrorIs(t, err, replay.ErrBodyEnded)
		assert.Zero(t, asked)
	})
	t.Run("read: asked once, closed once", func(t *testing.T) {
		asked = 0
		b := &lazyBody{src: src}
		got, err := io.ReadAll(b)
		require.NoError(t, err)
		assert.Equal(t, "order", string(got))
		opened := b.body.(*countingBody)
		require.NoError(t, b.Close())
		require.NoError(t, b.Close())
		assert.Equal(t, 1, asked)
		assert.EqualValues(t, 1, opened.closes.Load())
	})
	t.Run("a source that fails", func(t *testing.T) {
		fail := errors.New("gone")
		b := &lazyBody{src: sourceFunc(func() (io.ReadCloser, error) { return nil, fail })}
		_, err := b.Read(make([]byte, 8))
		assert.ErrorIs(t, err, fail)
		assert.NoError(t, b.Close())
	})
}

func TestRewindOnlyRefusesOtherCallers(t *testing.T) {
	getBody := rewindOnly(sourceFunc(func() (io.ReadCloser, error) {
		t.Error("the source was asked")
		return nil, nil
	}))
	_, err := getBody()
	assert.ErrorIs(t, err, ErrResendStopped)
}

func TestStoppedHTTP1SendWritesNothing(t *testing.T) {
	// A TLS server whose first connection speaks HTTP/2 and whose later
	// ones speak HTTP/1.1, as behind a balancer whose instances differ. It
	// runs the first send of a key-less POST and resets its stream with
	// PROTOCOL_ERROR; net/http finds no HTTP/2 connection left to resend on
	// and hands the request to its HTTP/1 loop, which writes without
	// looking at the context. The guard stops that send by closing its
	// connection first: nothing of it reaches the server, every time.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(8))
	certSrv := httptest.NewTLSServer(http.NotFoundHandler())
	cert, roots := certSrv.TLS.Certificates[0], certSrv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	certSrv.Close()
	var conns atomic.Int32
	config := &tls.Config{GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
		proto := "http/1.1"
		if conns.Add(1) == 1 {
			proto = "h2"
		}
		return &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{proto}}, nil
	}}
	for _, body := range guardedBodies {
		t.Run(body, func(t *testing.T) {
			for range 30 {
				conns.Store(0)
				srv := newLaneServer(t, true, "protocol", config)
				base := &http.Transport{DialContext: srv.dial, ForceAttemptHTTP2: true, TLSClientConfig: &tls.Config{RootCAs: roots}}
				tr := New(WithBase(base), WithBackoff(backoff.Constant(0)))
				_, err := tr.RoundTrip(guardedPost("https://"+srv.ln.Addr().String()+"/orders", body, "no key"))
				require.ErrorIs(t, err, ErrResendStopped)
				var rerr *Error
				require.ErrorAs(t, err, &rerr)
				require.Equal(t, 1, rerr.Attempts, "the stopped send is not counted")
				require.NoError(t, srv.drain())
				sends, execs := srv.take()
				require.Equal(t, 1, sends, "the HTTP/1 send never arrived")
				require.Equal(t, 1, execs)
				tr.CloseIdleConnections()
			}
		})
	}
}

func TestRefusedStreamResentOnItsConnection(t *testing.T) {
	// A stream refused with REFUSED_STREAM was not processed (RFC 9113,
	// section 8.7), and leaves its connection open to new streams:
	// net/http's own resend on that connection is let through, whatever
	// the POST's body. The server runs the POST once, and both sends are
	// counted.
	for _, body := range guardedBodies {
		t.Run(body, func(t *testing.T) {
			srv := newLaneServer(t, true, "refuse", nil)
			var resends int
			tr := New(WithBase(&http.Transport{DialContext: srv.dial, Protocols: h2cTransport().Protocols}), WithBackoff(backoff.Constant(0)),
				WithOnRetry(func(e RetryEvent) {
					if e.BaseResend {
						resends++
					}
				}))
			defer tr.CloseIdleConnections()
			resp, err := tr.RoundTrip(guardedPost("http://"+srv.ln.Addr().String()+"/orders", body, "blank Idempotency-Key"))
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, http.StatusOK, resp.StatusCode)
			assert.Equal(t, 2, Attempts(resp), "refused, then resent by net/http")
			assert.Equal(t, 1, resends, "the resend reported, not retried")
			require.NoError(t, srv.drain())
			sends, execs := srv.take()
			assert.Equal(t, 2, sends, "refused, then resent")
			assert.Equal(t, 1, execs)
			srv.mu.Lock()
			assert.Equal(t, 1, srv.dialed, "on the refused stream's connection")
			srv.mu.Unlock()
		})
	}
}
