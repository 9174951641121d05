package guard

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp/internal/replay"
	"github.com/retryhttp/retryhttp/internal/testkit"
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
		{"one send", []send{{HTTP1GetConn, c1}}, false},
		{"HTTP/1 resend, which follows a send that wrote nothing", []send{{HTTP1GetConn, c1}, {HTTP1GetConn, c2}}, false},
		{"HTTP/1 resend that goes out over HTTP/2", []send{{HTTP1GetConn, c1}, {HTTP2GotConn, c2}}, false},
		{"HTTP/2 resend on the same connection: REFUSED_STREAM", []send{{HTTP2GotConn, c1}, {HTTP2GotConn, c1}}, false},
		{"HTTP/2 resend on another connection", []send{{HTTP2GotConn, c1}, {HTTP2GotConn, c2}}, true},
		{"HTTP/2 send handed to HTTP/1", []send{{HTTP2GotConn, c1}, {HTTP1GetConn, c2}}, true},
		{"a base other than net/http's", []send{{"example.com/rt.(*T).RoundTrip", c1}, {"example.com/rt.(*T).RoundTrip", c1}}, true},
		{"net/http after another base", []send{{"example.com/rt.(*T).RoundTrip", c1}, {HTTP1GetConn, c2}}, true},
		{"three sends on one HTTP/2 connection", []send{{HTTP2GotConn, c1}, {HTTP2GotConn, c1}, {HTTP2GotConn, c1}}, false},
		{"HTTP/2 resend after an HTTP/1 one", []send{{HTTP1GetConn, c1}, {HTTP2GotConn, c2}, {HTTP2GotConn, c1}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c1.closes.Store(0)
			c2.closes.Store(0)
			g, ctx := Start(context.Background(), Base{})
			defer g.End()
			for i, s := range tt.sends {
				g.obtainedFrom(s.from, s.conn)
				if i < len(tt.sends)-1 {
					require.NoError(t, ctx.Err(), "send %d", i+1)
				}
			}
			last := tt.sends[len(tt.sends)-1]
			assert.Equal(t, tt.stop, g.StoppedResend())
			if tt.stop {
				assert.ErrorIs(t, context.Cause(ctx), ErrResendStopped)
			} else {
				assert.NoError(t, ctx.Err())
			}
			wantCloses := 0
			if tt.stop && last.from == HTTP1GetConn {
				wantCloses = 1 // net/http's HTTP/1 write loop would not see the cancel
			}
			assert.EqualValues(t, wantCloses, last.conn.closes.Load(), "closes of the stopped send's connection")
		})
	}
}

func TestHookCallerSeesThroughThisPackage(t *testing.T) {
	var got string
	hook := func() { got = HookCaller() }
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
			guarded, h := Header(tt.h, tt.once)
			assert.Equal(t, tt.guarded, guarded)
			assert.Equal(t, tt.want, h)
		})
	}
}

// sourceFunc is a replay.Source of a test's.
type sourceFunc func() (io.ReadCloser, error)

func (f sourceFunc) Resend() (io.ReadCloser, error) { return f() }

func TestLazyBody(t *testing.T) {
	var asked int
	src := sourceFunc(func() (io.ReadCloser, error) {
		asked++
		return &testkit.CountingBody{Reader: strings.NewReader("order")}, nil
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
		opened := b.body.(*testkit.CountingBody)
		require.NoError(t, b.Close())
		require.NoError(t, b.Close())
		assert.Equal(t, 1, asked)
		assert.EqualValues(t, 1, opened.Closes.Load())
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
	getBody := RewindOnly(sourceFunc(func() (io.ReadCloser, error) {
		t.Error("the source was asked")
		return nil, nil
	}))
	_, err := getBody()
	assert.ErrorIs(t, err, ErrResendStopped)
}

// TestLoopOfTheFirstConnection: over net/http's Transport, a connection
// without TLS comes from its HTTP/1 loop, unless the Transport may speak
// HTTP/2 without TLS, when the stack must tell.
func TestLoopOfTheFirstConnection(t *testing.T) {
	c := &closeCounter{}
	assert.Equal(t, HTTP1GetConn, loopOf(c, false))
	assert.Empty(t, loopOf(c, true), "h2c: the stack tells")
	assert.Empty(t, loopOf(nil, false), "no connection: the stack tells")
}

// TestPooledHooksGoBackOnceReturned: a guard over net/http's Transport
// takes its hooks from the pool; once the base's RoundTrip has returned,
// they go back, aimed at no guard, and its context no longer answers for
// them.
func TestPooledHooksGoBackOnceReturned(t *testing.T) {
	g, ctx := Start(context.Background(), Base{Direct: true})
	defer g.End()
	tr := httptrace.ContextClientTrace(ctx)
	require.NotNil(t, tr)
	tr.GetConn("x:1")
	tr.GotConn(httptrace.GotConnInfo{Conn: &closeCounter{}})
	assert.True(t, g.GotConn())
	assert.True(t, g.HTTP1(), "a connection without TLS: net/http's HTTP/1 loop")
	h := g.ctx.hooks
	g.Returned()
	g.Returned()
	assert.Nil(t, h.g, "the hooks aim at no guard")
	assert.Nil(t, httptrace.ContextClientTrace(ctx), "the context no longer answers for them")
	assert.True(t, g.GotConn(), "what the hooks found stays the guard's")
}
