package otelretry_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/otelretry"
)

// closeOnceServer is an HTTP/1 server on loopback that answers every
// request with 200, except the first request to /call that comes on a
// reused connection: it closes that connection once it has read the
// request, without answering.
type closeOnceServer struct {
	ln      net.Listener
	wg      sync.WaitGroup
	dropped atomic.Bool
	calls   atomic.Int32 // requests to /call read
}

func newCloseOnceServer(t *testing.T) *closeOnceServer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := &closeOnceServer{ln: ln}
	s.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.wg.Go(func() { s.serve(c) })
		}
	})
	t.Cleanup(func() {
		ln.Close()
		s.wg.Wait()
	})
	return s
}

func (s *closeOnceServer) serve(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	for n := 0; ; n++ {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, req.Body)
		if req.URL.Path == "/call" {
			s.calls.Add(1)
			if n > 0 && s.dropped.CompareAndSwap(false, true) {
				return
			}
		}
		if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"); err != nil {
			return
		}
	}
}

// TestBaseResendCounted proves that a send net/http makes again on its own
// (a GET on a reused keep-alive connection that the server closed after
// reading it) is counted as an attempt, marked retryhttp.base_resend, and
// is an event on the caller's span, not a retry.
func TestBaseResendCounted(t *testing.T) {
	srv := newCloseOnceServer(t)
	tel := newTelemetry(t)
	tr := retryhttp.New(otelretry.Instrument(nil, otelretry.WithTracerProvider(tel.tp), otelretry.WithMeterProvider(tel.mp)))
	defer tr.CloseIdleConnections()
	url := "http://" + srv.ln.Addr().String()

	// A first request leaves a keep-alive connection idle.
	req, err := http.NewRequest(http.MethodGet, url+"/warm", nil)
	require.NoError(t, err)
	_, err = do(t, tr, req)
	require.NoError(t, err)

	ctx, op := tel.operation(t.Context())
	req, err = http.NewRequestWithContext(ctx, http.MethodGet, url+"/call", nil)
	require.NoError(t, err)
	resp, err := do(t, tr, req)
	op.End()
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.EqualValues(t, 2, srv.calls.Load(), "requests the server read")
	assert.Equal(t, 2, retryhttp.Attempts(resp))

	m := tel.metrics(t)
	server := netip.MustParseAddrPort(srv.ln.Addr().String())
	host := []attribute.KeyValue{semconv.HTTPRequestMethodGet, semconv.ServerAddress(server.Addr().String()), semconv.ServerPort(int(server.Port()))}
	assert.EqualValues(t, 3, sum(t, m[otelretry.AttemptsName]), "attempts, the warm-up's included")
	assert.EqualValues(t, 1, sum(t, m[otelretry.AttemptsName], append(host, otelretry.BaseResendKey.Bool(true))...), "the base's own")
	_, retried := m[otelretry.RetriesName]
	assert.False(t, retried, "no retry")

	events := tel.span(t, "operation").Events()
	require.Len(t, events, 1)
	assert.Equal(t, otelretry.BaseResendEventName, events[0].Name)
	n, _ := attr(events[0].Attributes, otelretry.AttemptKey)
	assert.EqualValues(t, 1, n.AsInt64())
	port, ok := attr(events[0].Attributes, semconv.NetworkPeerPortKey)
	require.True(t, ok)
	assert.EqualValues(t, server.Port(), port.AsInt64())
	assert.Len(t, tel.clientSpans(), 2, "one span per attempt: the resend is within the second")
}
