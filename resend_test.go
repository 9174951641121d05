package retryhttp

import (
	"bufio"
	"crypto/tls"
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
)

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
