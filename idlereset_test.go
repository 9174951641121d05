package retryhttp

import (
	"context"
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

// heldConn is a client connection whose reads wait, once a response has
// been read, until the next request is written: an idle connection in
// net/http's pool is not watched, so the client does not notice a server
// that closes it, as happens when the close arrives just as the client
// picks the connection for its next request.
type heldConn struct {
	net.Conn
	mu     sync.Mutex
	cond   sync.Cond
	wrote  bool // a request was written since the last response bytes were read
	closed bool
}

func newHeldConn(c net.Conn) *heldConn {
	h := &heldConn{Conn: c}
	h.cond.L = &h.mu
	return h
}

func (c *heldConn) Read(p []byte) (int, error) {
	c.mu.Lock()
	for !c.wrote && !c.closed {
		c.cond.Wait()
	}
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return 0, net.ErrClosed
	}
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.mu.Lock()
		c.wrote = false
		c.mu.Unlock()
	}
	return n, err
}

func (c *heldConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if n > 0 {
		c.mu.Lock()
		c.wrote = true
		c.cond.Broadcast()
		c.mu.Unlock()
	}
	return n, err
}

func (c *heldConn) Close() error {
	c.mu.Lock()
	c.closed = true
	c.cond.Broadcast()
	c.mu.Unlock()
	return c.Conn.Close()
}

// acceptLog hands each connection a listener accepts to the test.
type acceptLog struct {
	net.Listener
	conns chan net.Conn
}

func (l *acceptLog) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.conns <- c
	}
	return c, err
}

// TestIdleConnClosedByServer checks the keep-alive race over HTTP/1: a
// key-less POST is written to an idle connection that the server has
// reset. Nothing of it reaches the server, and net/http, seeing that
// nothing was written, sends it again on a new connection, as it does
// through a plain transport: the POST succeeds, executed once.
func TestIdleConnClosedByServer(t *testing.T) {
	bodies := []struct {
		name string
		want string // the body the server must receive
		make func(url string) (*http.Request, error)
	}{
		{"no body", "", func(url string) (*http.Request, error) {
			return http.NewRequest(http.MethodPost, url, nil)
		}},
		{"body with GetBody", `{"order":1}`, func(url string) (*http.Request, error) {
			return http.NewRequest(http.MethodPost, url, strings.NewReader(`{"order":1}`))
		}},
		{"body with a GetBody of its own", `{"order":1}`, func(url string) (*http.Request, error) {
			req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"order":1}`))
			if err == nil {
				req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(`{"order":1}`)), nil }
			}
			return req, err
		}},
		{"body without GetBody", `{"order":1}`, func(url string) (*http.Request, error) {
			return http.NewRequest(http.MethodPost, url, &plainReader{strings.NewReader(`{"order":1}`)})
		}},
	}
	for _, b := range bodies {
		t.Run(b.name, func(t *testing.T) {
			var executions atomic.Int32
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				if r.Method == http.MethodPost {
					assert.Equal(t, b.want, string(body))
					executions.Add(1)
				}
				w.Header().Set("Content-Length", "2")
				w.Write([]byte("ok"))
			}))
			accepted := &acceptLog{Listener: srv.Listener, conns: make(chan net.Conn, 4)}
			srv.Listener = accepted
			srv.Start()
			defer srv.Close()

			dialed := make(chan *heldConn, 4)
			base := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
				if err != nil {
					return nil, err
				}
				h := newHeldConn(c)
				dialed <- h
				return h, nil
			}}
			defer base.CloseIdleConnections()
			tr := New(WithBase(base))

			// A first request leaves a keep-alive connection idle.
			resp, err := tr.RoundTrip(get(t, srv.URL))
			require.NoError(t, err)
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			client := <-dialed

			// The server resets it; the client's kernel has the reset once
			// a read of the socket itself fails.
			server := <-accepted.conns
			server.(*net.TCPConn).SetLinger(0)
			server.Close()
			_, err = client.Conn.Read(make([]byte, 1))
			require.Error(t, err)

			var reused []bool
			trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused = append(reused, i.Reused) }}
			req, err := b.make(srv.URL)
			require.NoError(t, err)
			req = req.WithContext(httptrace.WithClientTrace(t.Context(), trace))
			resp, err = tr.RoundTrip(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			assert.Equal(t, http.StatusOK, resp.StatusCode)
			assert.Equal(t, []bool{true, false}, reused, "written to the reset connection, then to a new one")
			assert.EqualValues(t, 1, executions.Load(), "executed once")
			assert.Equal(t, 1, Attempts(resp), "nothing of the first send left the client")
		})
	}
}
