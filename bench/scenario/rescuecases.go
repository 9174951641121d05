package scenario

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/retryhttp/retryhttp/bench/peers"
)

// counted starts an HTTP/1.1 server whose handler runs h with the number of
// the attempt, counting executions (attempts that reach h and return).
func counted(h func(w http.ResponseWriter, r *http.Request, attempt int64)) (*httptest.Server, *atomic.Int64, *atomic.Int64) {
	var attempts, execs atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := attempts.Add(1)
		_, _ = io.Copy(io.Discard, r.Body)
		execs.Add(1)
		h(w, r, n)
	}))
	return srv, &attempts, &execs
}

// statusFirst answers the first attempt with code and header, the others
// with 200.
func statusFirst(code int, header http.Header) func(http.ResponseWriter, *http.Request, int64) {
	return func(w http.ResponseWriter, _ *http.Request, n int64) {
		if n == 1 {
			for k, v := range header {
				w.Header()[k] = v
			}
			http.Error(w, http.StatusText(code), code)
			return
		}
		_, _ = io.WriteString(w, "ok\n")
	}
}

// statusCase is a request of method, with header, to a server that answers
// its first attempt with code (and Retry-After: retryAfter, when set).
func statusCase(name, rule string, once bool, method string, code int, retryAfter string, header http.Header) rescueCase {
	return rescueCase{name: name, rule: rule, once: once, run: func(ctx context.Context, lib peers.Library) Cell {
		h := http.Header{}
		if retryAfter != "" {
			h.Set("Retry-After", retryAfter)
		}
		srv, _, execs := counted(statusFirst(code, h))
		defer srv.Close()
		req := newReq(ctx, method, srv.URL+"/orders")
		for k, v := range header {
			req.Header[k] = v
		}
		c := send(lib, freshBase(), req)
		c.Executions = execs.Load()
		return c
	}}
}

// unprocessedCase is a request of method to a server that answers its
// first attempt with code without running the request (a 421 Misdirected
// Request, a 425 Too Early), and runs the others; over HTTP/2 (TLS) when
// h2 is set, HTTP/1.1 otherwise.
func unprocessedCase(name, rule string, once bool, method string, code int, h2 bool) rescueCase {
	return rescueCase{name: name, rule: rule, once: once, run: func(ctx context.Context, lib peers.Library) Cell {
		var attempts, execs atomic.Int64
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			if attempts.Add(1) == 1 {
				http.Error(w, http.StatusText(code), code)
				return
			}
			execs.Add(1)
			_, _ = io.WriteString(w, "ok\n")
		}))
		base := freshBase()
		startServer(srv, base, h2)
		defer srv.Close()
		c := send(lib, base, newReq(ctx, method, srv.URL+"/orders"))
		c.Executions = execs.Load()
		return c
	}}
}

// resetAfterRead reads the request and then, on the first attempt, resets
// the connection instead of answering (or closes it, when !rst).
func resetAfterRead(rst bool) func(http.ResponseWriter, *http.Request, int64) {
	return func(w http.ResponseWriter, r *http.Request, n int64) {
		if n > 1 {
			_, _ = io.WriteString(w, "ok\n")
			return
		}
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		if tcp, ok := conn.(*net.TCPConn); ok && rst {
			_ = tcp.SetLinger(0)
		}
		conn.Close()
	}
}

// serverCase runs a request of method against a server whose handler is h.
func serverCase(name, rule string, once bool, method string, h func(http.ResponseWriter, *http.Request, int64)) rescueCase {
	return rescueCase{name: name, rule: rule, once: once, run: func(ctx context.Context, lib peers.Library) Cell {
		srv, _, execs := counted(h)
		defer srv.Close()
		c := send(lib, freshBase(), newReq(ctx, method, srv.URL+"/orders"))
		c.Executions = execs.Load()
		return c
	}}
}

func rescueCases() []rescueCase {
	var cs []rescueCase
	for _, code := range []int{408, 429, 500, 502, 503, 504} {
		cs = append(cs,
			statusCase(fmt.Sprintf("GET: %d, then 200", code), "", false, http.MethodGet, code, "", nil),
			statusCase(fmt.Sprintf("GET: %d with Retry-After: 1, then 200", code), "", false, http.MethodGet, code, "1", nil))
	}
	cs = append(cs,
		statusCase("GET: 503 with Retry-After: 3600, then 200", ruleRetryAfter, false, http.MethodGet, 503, "3600", nil),
		statusCase("GET: 501, then 200", "", false, http.MethodGet, 501, "", nil),
		statusCase("GET: 511, then 200", ruleNetworkAuth, false, http.MethodGet, 511, "", nil),
		unprocessedCase("GET: 421 Misdirected Request, then 200", "", false, http.MethodGet, http.StatusMisdirectedRequest, false),
		unprocessedCase("POST without a key: 421 Misdirected Request, then 200", "", true, http.MethodPost, http.StatusMisdirectedRequest, false),
		unprocessedCase("POST without a key: 421 Misdirected Request over HTTP/2, then 200", "", true, http.MethodPost, http.StatusMisdirectedRequest, true),
		unprocessedCase("GET: 425 Too Early, then 200", ruleTooEarly, false, http.MethodGet, http.StatusTooEarly, false),
		statusCase("POST with an Idempotency-Key: 503, then 200", "", false, http.MethodPost, 503, "",
			http.Header{"Idempotency-Key": {"order-42"}}),
		statusCase("POST without a key: 503, then 200", ruleKeyless, true, http.MethodPost, 503, "", nil),
		statusCase("POST with a blank Idempotency-Key: 503, then 200", ruleKeyless, true, http.MethodPost, 503, "",
			http.Header{"Idempotency-Key": {" "}}),
		serverCase("GET: connection reset after the request is read", "", false, http.MethodGet, resetAfterRead(true)),
		serverCase("POST without a key: connection reset after the request is read", ruleKeyless, true, http.MethodPost, resetAfterRead(true)),
		serverCase("GET: connection closed without an answer", "", false, http.MethodGet, resetAfterRead(false)),
		serverCase("GET: reset after the response headers", "", false, http.MethodGet, func(w http.ResponseWriter, _ *http.Request, n int64) {
			if n == 1 {
				w.Header().Set("Content-Length", "100")
				_, _ = io.WriteString(w, "part")
				http.NewResponseController(w).Flush()
				panic(http.ErrAbortHandler)
			}
			_, _ = io.WriteString(w, "ok\n")
		}),
		idleResetCase("GET: idle keep-alive connection reset", http.MethodGet),
		idleResetCase("POST without a key: idle keep-alive connection reset", http.MethodPost),
		refusedDialCase("GET: connection refused (first dial)", http.MethodGet),
		refusedDialCase("POST without a key: connection refused (first dial)", http.MethodPost),
		dnsCase("GET: temporary DNS failure (first lookup)", true),
		dnsCase("GET: host does not exist (NXDOMAIN)", false),
		headerTimeoutCase("GET: base's ResponseHeaderTimeout, HTTP/1.1", false),
		headerTimeoutCase("GET: base's ResponseHeaderTimeout, HTTP/2", true),
		tlsHandshakeTimeoutCase(),
		certCase("GET: certificate from an unknown authority", false),
		certCase("GET: certificate for another host name", true),
		proxyCase("GET: proxy answers CONNECT 502, then tunnels", http.MethodGet, 502, 1),
		proxyCase("GET: proxy answers CONNECT 503, then tunnels", http.MethodGet, 503, 1),
		proxyCase("POST without a key: proxy answers CONNECT 503, then tunnels", http.MethodPost, 503, 1),
		proxyCase("GET: proxy answers CONNECT 429, then tunnels", http.MethodGet, 429, 1),
		proxyCase("GET: proxy answers CONNECT 407 (credentials)", http.MethodGet, 407, -1),
		uploadCase("PUT 512 KiB without GetBody, Content-Length: 503 before the body is read", "length"),
		uploadCase("PUT 512 KiB without GetBody, chunked: 503 before the body is read", "chunked"),
		uploadCase("PUT 512 KiB without GetBody, Expect: 100-continue: 503 before the body is read", "expect"),
		h2Case("GET: HTTP/2 REFUSED_STREAM", "", false, http.MethodGet, "refuse"),
		h2Case("POST without a key: HTTP/2 REFUSED_STREAM", "", true, http.MethodPost, "refuse"),
		h2Case("POST without a key: HTTP/2 PROTOCOL_ERROR after the request ran", ruleBaseResend, true, http.MethodPost, "protocol"),
		h2Case("GET: HTTP/2 GOAWAY, stream not processed", "", false, http.MethodGet, "goaway"),
		h2TLSCase("GET: HTTP/2 stream reset (INTERNAL_ERROR)", func(w http.ResponseWriter, n int64, _ *httptest.Server) {
			if n == 1 {
				panic(http.ErrAbortHandler)
			}
			_, _ = io.WriteString(w, "ok\n")
		}),
		h2TLSCase("GET: HTTP/2 connection lost after the request is read", func(w http.ResponseWriter, n int64, srv *httptest.Server) {
			if n == 1 {
				srv.CloseClientConnections()
				return
			}
			_, _ = io.WriteString(w, "ok\n")
		}),
	)
	return append(cs, bodyCases()...)
}

// idleResetCase warms a connection up, has the server reset it once idle,
// and sends the request, which may be written to the dead connection.
func idleResetCase(name, method string) rescueCase {
	once := method == http.MethodPost
	rule := ""
	if once {
		rule = ruleKeyless
	}
	return rescueCase{name: name, rule: rule, once: once, run: func(ctx context.Context, lib peers.Library) Cell {
		var execs atomic.Int64
		var armed atomic.Bool
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			if r.URL.Path == "/orders" {
				execs.Add(1)
			}
			_, _ = io.WriteString(w, "ok\n")
		}))
		srv.Config.ConnState = func(c net.Conn, s http.ConnState) {
			if s == http.StateIdle && armed.CompareAndSwap(true, false) {
				if tcp, ok := c.(*net.TCPConn); ok {
					_ = tcp.SetLinger(0)
				}
				c.Close()
			}
		}
		srv.Start()
		defer srv.Close()
		base := freshBase()
		rt := lib.New(base, rescueConfig)
		defer closeIdle(rt, base)
		armed.Store(true)
		warm, err := rt.RoundTrip(newReq(ctx, http.MethodGet, srv.URL+"/warm"))
		if err == nil {
			_, _ = io.Copy(io.Discard, warm.Body)
			warm.Body.Close()
		}
		c := send(lib, base, newReq(ctx, method, srv.URL+"/orders"))
		c.Executions = execs.Load()
		return c
	}}
}

// refusedDialCase sends the first dial to a port where nothing listens.
func refusedDialCase(name, method string) rescueCase {
	return rescueCase{name: name, once: method == http.MethodPost, run: func(ctx context.Context, lib peers.Library) Cell {
		srv, _, execs := counted(statusFirst(http.StatusOK, nil))
		defer srv.Close()
		l, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			return Cell{Err: err}
		}
		closed := l.Addr().String()
		l.Close()
		base := freshBase()
		base.DialContext = dialFirst(func(ctx context.Context, d *net.Dialer) (net.Conn, error) {
			return d.DialContext(ctx, "tcp", closed)
		})
		c := send(lib, base, newReq(ctx, method, srv.URL+"/orders"))
		c.Executions = execs.Load()
		return c
	}}
}

// dnsCase fails the name lookup of svc.test with the error net's resolver
// gives: temporarily on the first dial only, or for good (not found).
func dnsCase(name string, temporary bool) rescueCase {
	return rescueCase{name: name, run: func(ctx context.Context, lib peers.Library) Cell {
		srv, _, execs := counted(statusFirst(http.StatusOK, nil))
		defer srv.Close()
		addr := srv.Listener.Addr().String()
		_, port, _ := net.SplitHostPort(addr)
		var d net.Dialer
		var lookups atomic.Int64
		base := freshBase()
		base.DialContext = func(ctx context.Context, network, a string) (net.Conn, error) {
			n := lookups.Add(1)
			if !temporary {
				return nil, &net.OpError{Op: "dial", Net: network, Err: &net.DNSError{Err: "no such host", Name: "svc.test", IsNotFound: true}}
			}
			if n == 1 {
				return nil, &net.OpError{Op: "dial", Net: network, Err: &net.DNSError{Err: "server misbehaving", Name: "svc.test", IsTemporary: true}}
			}
			return d.DialContext(ctx, network, addr)
		}
		c := send(lib, base, newReq(ctx, http.MethodGet, "http://svc.test:"+port+"/orders"))
		c.Executions = execs.Load()
		return c
	}}
}

// hangFirst holds the first attempt until the client gives up on it.
func hangFirst(w http.ResponseWriter, r *http.Request, n int64) {
	if n == 1 {
		<-r.Context().Done()
		return
	}
	_, _ = io.WriteString(w, "ok\n")
}

// baseTimeout is the base's own timeout in the rows that provoke one
// (ResponseHeaderTimeout, TLSHandshakeTimeout). The first attempt waits it
// out; every later attempt must beat it, answered by a loopback server while
// the matrix runs 64 cells at once, on a machine that may be busy with more:
// a timer on real sockets, so it is set far above any answer's time there
// (100 ms was missed on 2 cores at a load of 8). The stall row keeps the
// matrix running longer than this anyway.
const baseTimeout = time.Second

// headerTimeoutCase has the base give up on response headers after
// baseTimeout, over HTTP/1.1 or HTTP/2 (TLS).
func headerTimeoutCase(name string, h2 bool) rescueCase {
	return rescueCase{name: name, run: func(ctx context.Context, lib peers.Library) Cell {
		var attempts, execs atomic.Int64
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n := attempts.Add(1)
			if n > 1 {
				execs.Add(1)
			}
			hangFirst(w, r, n)
		}))
		base := freshBase()
		startServer(srv, base, h2)
		defer srv.Close()
		base.ResponseHeaderTimeout = baseTimeout
		c := send(lib, base, newReq(ctx, http.MethodGet, srv.URL+"/orders"))
		c.Executions = execs.Load()
		return c
	}}
}

// startServer starts srv, over TLS with HTTP/2 when h2 is set, and sets
// base up to speak to it.
func startServer(srv *httptest.Server, base *http.Transport, h2 bool) {
	if !h2 {
		srv.Start()
		return
	}
	srv.EnableHTTP2 = true
	srv.StartTLS()
	base.TLSClientConfig = srv.Client().Transport.(*http.Transport).TLSClientConfig
	base.ForceAttemptHTTP2 = true
}

// tlsHandshakeTimeoutCase holds the first connection's TLS handshake
// unanswered; the base gives up on it after baseTimeout.
func tlsHandshakeTimeoutCase() rescueCase {
	return rescueCase{name: "GET: base's TLSHandshakeTimeout (first connection silent)", run: func(ctx context.Context, lib peers.Library) Cell {
		var execs atomic.Int64
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			execs.Add(1)
			_, _ = io.WriteString(w, "ok\n")
		}))
		srv.Listener = &silentFirst{Listener: srv.Listener}
		srv.StartTLS()
		defer srv.Close()
		base := freshBase()
		base.TLSClientConfig = srv.Client().Transport.(*http.Transport).TLSClientConfig
		base.TLSHandshakeTimeout = baseTimeout
		c := send(lib, base, newReq(ctx, http.MethodGet, srv.URL+"/orders"))
		c.Executions = execs.Load()
		return c
	}}
}

// certCase is a TLS server whose certificate the client does not trust, or
// trusts for another name than the one it asks for.
func certCase(name string, otherName bool) rescueCase {
	return rescueCase{name: name, run: func(ctx context.Context, lib peers.Library) Cell {
		var execs atomic.Int64
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			execs.Add(1)
			_, _ = io.WriteString(w, "ok\n")
		}))
		srv.Config.ErrorLog = discardLog
		srv.StartTLS()
		defer srv.Close()
		base := freshBase()
		if otherName {
			cfg := srv.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
			cfg.ServerName = "other.test"
			base.TLSClientConfig = cfg
		}
		c := send(lib, base, newReq(ctx, http.MethodGet, srv.URL+"/orders"))
		c.Executions = execs.Load()
		return c
	}}
}

// proxyCase sends the request to an HTTPS destination through a CONNECT
// proxy that refuses the first refuse CONNECTs (every one if negative) with
// status.
func proxyCase(name, method string, status int, refuse int64) rescueCase {
	return rescueCase{name: name, once: method == http.MethodPost, run: func(ctx context.Context, lib peers.Library) Cell {
		var execs atomic.Int64
		dst := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			execs.Add(1)
			_, _ = io.WriteString(w, "ok\n")
		}))
		defer dst.Close()
		proxy := newConnectProxy(refuse, status)
		defer proxy.close()
		u, err := url.Parse(proxy.URL)
		if err != nil {
			return Cell{Err: err}
		}
		base := freshBase()
		base.Proxy = http.ProxyURL(u)
		base.TLSClientConfig = dst.Client().Transport.(*http.Transport).TLSClientConfig
		c := send(lib, base, newReq(ctx, method, dst.URL+"/orders"))
		c.Executions = execs.Load()
		return c
	}}
}

// uploadPayload is the body of the upload rows.
var uploadPayload = bytes.Repeat([]byte("0123456789abcdef"), 512<<10/16)

// slowSource is how long a gated reader takes to give the rest of its
// bytes when its gate stays open: a library that reads the whole body before
// sending it waits that long, as it would for a slow file.
const slowSource = 250 * time.Millisecond

// gated gives its first free bytes at once and the rest once gate is
// closed, or after slowSource: a file or a pipe slower than the network. It
// fails once ctx is done.
type gated struct {
	ctx  context.Context
	data []byte
	free int
	gate <-chan struct{}
	off  int
}

func (r *gated) Read(p []byte) (int, error) {
	if r.off == len(r.data) {
		return 0, io.EOF
	}
	if r.off >= r.free {
		t := time.NewTimer(slowSource)
		defer t.Stop()
		select {
		case <-r.gate:
		case <-t.C: // the source's own pace, not synchronisation
		case <-r.ctx.Done():
			return 0, r.ctx.Err()
		}
	}
	end := len(r.data)
	if r.off < r.free {
		end = r.free
	}
	n := copy(p, r.data[r.off:end])
	r.off += n
	return n, nil
}

// uploadCase sends a 512 KiB PUT from a reader without GetBody to a server
// that answers the first attempt 503 at once, without reading the body, and
// closes the connection; it stores the body of a later attempt. The
// caller's reader gives the first 320 KiB at once and the rest once that
// connection is closed. mode is "length", "chunked" or "expect".
func uploadCase(name, mode string) rescueCase {
	return rescueCase{name: name, run: func(ctx context.Context, lib peers.Library) Cell {
		var attempts, execs atomic.Int64
		closed := make(chan struct{})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if attempts.Add(1) == 1 {
				defer close(closed)
				conn, _, err := http.NewResponseController(w).Hijack()
				if err != nil {
					return
				}
				_, _ = io.WriteString(conn, "HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")
				conn.Close()
				return
			}
			b, err := io.ReadAll(r.Body)
			if err != nil || !bytes.Equal(b, uploadPayload) {
				http.Error(w, fmt.Sprintf("stored %d bytes of %d", len(b), len(uploadPayload)), http.StatusBadRequest)
				return
			}
			execs.Add(1)
			w.WriteHeader(http.StatusCreated)
		}))
		defer srv.Close()
		body := io.NopCloser(&gated{ctx: ctx, data: uploadPayload, free: 320 << 10, gate: closed})
		req, err := http.NewRequestWithContext(ctx, http.MethodPut, srv.URL+"/objects/1", body)
		if err != nil {
			return Cell{Err: err}
		}
		req.ContentLength = int64(len(uploadPayload))
		switch mode {
		case "chunked":
			req.ContentLength = -1
		case "expect":
			req.Header.Set("Expect", "100-continue")
		}
		base := freshBase()
		base.ExpectContinueTimeout = time.Second
		c := send(lib, base, req)
		c.Executions = execs.Load()
		return c
	}}
}

// h2Case runs a request of method against an h2Server whose first stream
// meets first.
func h2Case(name, rule string, once bool, method, first string) rescueCase {
	return rescueCase{name: name, rule: rule, once: once, run: func(ctx context.Context, lib peers.Library) Cell {
		srv := newH2Server(first)
		defer srv.close()
		c := send(lib, h2cBase(), newReq(ctx, method, srv.URL+"/orders"))
		c.Executions = srv.execs.Load()
		return c
	}}
}

// h2TLSCase runs a GET against net/http's HTTP/2 server, whose handler is h.
func h2TLSCase(name string, h func(w http.ResponseWriter, n int64, srv *httptest.Server)) rescueCase {
	return rescueCase{name: name, run: func(ctx context.Context, lib peers.Library) Cell {
		var attempts, execs atomic.Int64
		var srv *httptest.Server
		srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			n := attempts.Add(1)
			if n > 1 {
				execs.Add(1)
			}
			h(w, n, srv)
		}))
		srv.EnableHTTP2 = true
		srv.Config.ErrorLog = discardLog
		srv.StartTLS()
		defer srv.Close()
		base := freshBase()
		base.TLSClientConfig = srv.Client().Transport.(*http.Transport).TLSClientConfig
		base.ForceAttemptHTTP2 = true
		c := send(lib, base, newReq(ctx, http.MethodGet, srv.URL+"/orders"))
		c.Executions = execs.Load()
		return c
	}}
}

// discardLog is the error log of servers whose clients fail on purpose.
var discardLog = log.New(io.Discard, "", 0)
