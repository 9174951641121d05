package evidence

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp/internal/cancelctx"
)

// TestAbandonedAttemptIsNotSentAgain proves that an attempt left to
// answer is never sent again: net/http's send of it on another connection
// (after its own failed before an answer) is cancelled as it looks for
// one, and a connection it gets all the same is closed before anything is
// written on it, while the connection it holds is left open.
func TestAbandonedAttemptIsNotSentAgain(t *testing.T) {
	req, err := http.NewRequest(http.MethodGet, "http://svc.test/", nil)
	require.NoError(t, err)
	a, p := NewTrace(req, nil, nil, nil, false)
	tr := httptrace.ContextClientTrace(a.Context())
	require.NotNil(t, tr)

	held, heldPeer := net.Pipe()
	defer heldPeer.Close()
	tr.GetConn("svc.test:80")
	tr.GotConn(httptrace.GotConnInfo{Conn: held})
	tr.WroteRequest(httptrace.WroteRequestInfo{})
	assert.True(t, p.HoldsConn(), "an HTTP/1 connection of its own")

	cancels := 0
	p.Abandon(func() { cancels++ })
	assert.Zero(t, cancels, "left to answer, not cancelled")

	tr.GetConn("svc.test:80") // net/http sends it again
	assert.Equal(t, 1, cancels, "the send is cancelled as it looks for a connection")
	other, otherPeer := net.Pipe()
	defer otherPeer.Close()
	tr.GotConn(httptrace.GotConnInfo{Conn: other, Reused: true})
	_, err = other.Write([]byte("GET"))
	assert.ErrorIs(t, err, io.ErrClosedPipe, "the connection it got anyway is closed before the write")
	assert.Empty(t, p.Resends(), "no send of it again was counted")

	go func() { b := make([]byte, 1); heldPeer.Read(b) }()
	_, err = held.Write([]byte("x"))
	assert.NoError(t, err, "its own connection stays open")
	p.End()
}

// TestTraceTiesDerivedContextsToItsOwn proves that a context derived from
// a traced attempt's, as net/http's Transport derives one, is tied to the
// cancelctx.Ctx under the trace without a goroutine of its own, and ends
// as that is cancelled.
func TestTraceTiesDerivedContextsToItsOwn(t *testing.T) {
	var c cancelctx.Ctx
	c.Init(context.Background())
	req, err := http.NewRequestWithContext(&c, http.MethodGet, "http://svc.test/", nil)
	require.NoError(t, err)
	a, p := NewTrace(req, nil, nil, nil, false)
	defer p.End()
	before := runtime.NumGoroutine()
	derived, cancel := context.WithCancelCause(a.Context())
	defer cancel(nil)
	assert.Equal(t, before, runtime.NumGoroutine(), "goroutines started by the derived context")
	c.Cancel(context.Canceled)
	<-derived.Done()
}
