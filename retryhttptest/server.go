package retryhttptest

import (
	"bytes"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"time"
)

// A Server is a local HTTP server, as net/http/httptest's, whose attempts
// get the faults it was made with and are recorded. Its URL, Client,
// Certificate and Config are those of the embedded httptest.Server.
//
// It is safe to read the records while the server runs.
type Server struct {
	*httptest.Server

	fault   Fault
	handler http.Handler
	cfg     config
	ledger  // records, and the methods that read them
	stop    // ends hangs and pauses on Close
}

// NewServer starts and returns a server whose attempts get f, and whose
// handler h answers those that f lets through. A nil h answers 200 with the
// body "ok\n". Setup failures panic, as in net/http/httptest.
func NewServer(h http.Handler, f Fault, opts ...Option) *Server {
	s := NewUnstartedServer(h, f, opts...)
	s.Start()
	return s
}

// NewTLSServer starts and returns a server as NewServer does, over TLS.
// Its Client trusts its certificate.
func NewTLSServer(h http.Handler, f Fault, opts ...Option) *Server {
	s := NewUnstartedServer(h, f, opts...)
	s.StartTLS()
	return s
}

// NewHTTP2Server starts and returns a server as NewServer does, over TLS
// with HTTP/2. Its Client speaks HTTP/2 to it.
func NewHTTP2Server(h http.Handler, f Fault, opts ...Option) *Server {
	s := NewUnstartedServer(h, f, opts...)
	s.EnableHTTP2 = true
	s.StartTLS()
	return s
}

// NewUnstartedServer returns a server that is not started yet: change its
// Config, TLS or EnableHTTP2, then call Start or StartTLS. Call Close when
// done, whether or not it was started.
func NewUnstartedServer(h http.Handler, f Fault, opts ...Option) *Server {
	if h == nil {
		h = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			io.WriteString(w, "ok\n")
		})
	}
	s := &Server{fault: f, handler: h, cfg: newConfig(opts), stop: newStop()}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	s.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		if state == http.StateNew {
			s.connected()
		}
	}
	return s
}

// Close ends any hanging or paused attempts, shuts the server down, and
// waits until every request has finished.
func (s *Server) Close() {
	s.stop.close()
	s.Server.Close()
}

// Connections returns how many connections clients have opened.
func (s *Server) Connections() int { return s.connectionCount() }

// delayedBodyLimit bounds how much of a delayed request's body is read
// before the delay.
const delayedBodyLimit = 1 << 20

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	e, a := s.arrive(s.cfg.key(r), s.fault)
	defer s.leave(e)
	if a.kind == closeEarly {
		abort(w, r, false)
		return
	}
	body := newBodyHash(r.Body)
	r.Body = body
	defer s.body(e, body)
	if s.answer(w, r, a, body) {
		return
	}
	switch a.kind {
	case reset:
		s.handler.ServeHTTP(httptest.NewRecorder(), r)
		s.executed(e)
		body.drain()
		abort(w, r, true)
	default:
		if a.cut < 0 && a.chunk == 0 {
			// Recorded first: the client may have the response before
			// the handler returns.
			s.executed(e)
			rw, cw := cutWriterFor(w, r, a.stream, s.stop)
			s.handler.ServeHTTP(rw, r)
			body.drain()
			cw.finish()
			return
		}
		rec := httptest.NewRecorder()
		s.handler.ServeHTTP(rec, r)
		s.executed(e)
		body.drain()
		s.replay(w, r, rec, a)
	}
}

// stop ends the waits of a server's attempts (hangs, delays and pauses
// between chunks) when the server closes.
type stop struct {
	done chan struct{}
	once *sync.Once
}

func newStop() stop { return stop{done: make(chan struct{}), once: new(sync.Once)} }

func (s stop) close() { s.once.Do(func() { close(s.done) }) }

// answer does what a says before the handler, or an upstream, may run: it
// waits a's delay and answers a canned response or a hang itself. It
// reports whether the attempt is over.
func (s stop) answer(w http.ResponseWriter, r *http.Request, a action, body *bodyHash) bool {
	if a.delay > 0 {
		// net/http notices a client that gives up only once the request
		// body has been read: read it (up to a limit) before the delay,
		// and pass on a copy.
		b, _ := io.ReadAll(io.LimitReader(body, delayedBodyLimit))
		r.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(b), body), body}
	}
	if !s.pause(r, a.delay) {
		return true
	}
	switch a.kind {
	case respond:
		body.drain()
		h := w.Header()
		for k, v := range a.header {
			h[k] = v
		}
		h.Set("Content-Length", strconv.Itoa(len(a.body)))
		w.WriteHeader(a.status)
		io.WriteString(w, a.body)
		return true
	case hang:
		body.drain()
		select {
		case <-r.Context().Done():
		case <-s.done:
			abort(w, r, false)
		}
		return true
	}
	return false
}

// replay sends a buffered response truncated or slowly, as a says.
func (s stop) replay(w http.ResponseWriter, r *http.Request, rec *httptest.ResponseRecorder, a action) {
	h := w.Header()
	for k, v := range rec.Header() {
		h[k] = v
	}
	b := rec.Body.Bytes()
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(rec.Code)
	rc := http.NewResponseController(w)
	if a.cut >= 0 && a.cut < len(b) {
		w.Write(b[:a.cut])
		rc.Flush()
		abort(w, r, false)
		return
	}
	for len(b) > 0 {
		n := len(b)
		if a.chunk > 0 {
			n = min(a.chunk, n)
		}
		if _, err := w.Write(b[:n]); err != nil {
			return
		}
		rc.Flush()
		b = b[n:]
		if len(b) > 0 && !s.pause(r, a.every) {
			return
		}
	}
}

// pause waits d, and reports whether it did: false if the client gave up
// or the server closed first.
func (s stop) pause(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
	case <-s.done:
	}
	return false
}

// abort ends the exchange without a (complete) response. Over HTTP/1 it
// closes the connection, with a reset (RST) when reset is set; over HTTP/2
// it resets the stream. It may not return: net/http's ErrAbortHandler panic
// is how a handler aborts.
func abort(w http.ResponseWriter, r *http.Request, reset bool) {
	if r.ProtoMajor == 1 {
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			if reset {
				linger0(conn)
			}
			conn.Close()
			return
		}
	}
	panic(http.ErrAbortHandler)
}

// linger0 makes closing conn send a reset rather than a graceful close.
func linger0(conn net.Conn) {
	if tc, ok := conn.(*tls.Conn); ok {
		conn = tc.NetConn()
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
}
