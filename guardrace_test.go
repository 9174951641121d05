package retryhttp

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/retryhttp/retryhttp/backoff"
	"github.com/retryhttp/retryhttp/internal/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A laneServer is a loopback server of one lane of the race test: the lane
// sends one request at a time, and the server counts what each request did
// at the destination: its sends that arrived (request heads read, HTTP/2
// header blocks received) and its executions. The first send of each
// request meets the lane's failure; every later one is run and answered.
type laneServer struct {
	ln    net.Listener
	h2    bool
	first string // "close" (HTTP/1), or "protocol", "refuse", "goaway" (HTTP/2)
	// tls, if set, makes the server speak TLS, and HTTP/2 or HTTP/1.1 as
	// the connection's protocol negotiation settles.
	tls    *tls.Config
	sends  atomic.Int32
	execs  atomic.Int32
	wg     sync.WaitGroup
	signal chan struct{} // a connection was dialed, accepted or ended

	mu       sync.Mutex
	dialed   int // connections the lane's client dialed
	accepted int
	live     map[*h2Conn]bool // true once drain closed its side
}

func newLaneServer(t *testing.T, h2 bool, first string, config *tls.Config) *laneServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := &laneServer{ln: ln, h2: h2, first: first, tls: config, signal: make(chan struct{}, 1), live: map[*h2Conn]bool{}}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			if s.tls != nil {
				nc = tls.Server(nc, s.tls)
			}
			c := &h2Conn{Conn: nc}
			s.mu.Lock()
			s.accepted++
			s.live[c] = false
			s.mu.Unlock()
			s.notify()
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer s.ended(c)
				h2 := s.h2
				if tc, ok := c.Conn.(*tls.Conn); ok {
					if tc.Handshake() != nil {
						return
					}
					s.notify() // drain may now close its side
					h2 = tc.ConnectionState().NegotiatedProtocol == "h2"
				}
				if h2 {
					s.serveH2(c)
				} else {
					s.serveH1(c)
				}
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		s.mu.Lock()
		for c := range s.live {
			c.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
	})
	return s
}

func (s *laneServer) notify() {
	select {
	case s.signal <- struct{}{}:
	default:
	}
}

func (s *laneServer) ended(c *h2Conn) {
	c.Close()
	s.mu.Lock()
	delete(s.live, c)
	s.mu.Unlock()
	s.notify()
}

// dial is the lane client's DialContext: it counts the connections made,
// so that drain knows which to wait for.
func (s *laneServer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err == nil {
		s.mu.Lock()
		s.dialed++
		s.mu.Unlock()
		s.notify()
	}
	return c, err
}

// drain ends every connection of the lane and returns once the server has
// read each to its end: whatever the client wrote, however late, has then
// been counted. The server closes its side of each connection (a FIN),
// which makes net/http's client close the connection, in use or idle; a
// write of the client's either reached the server before that close or
// fails. A connection dialed and not yet accepted is waited for first.
func (s *laneServer) drain() error {
	bound := time.NewTimer(30 * time.Second) // only bounds a test that would hang
	defer bound.Stop()
	for {
		s.mu.Lock()
		done := s.accepted == s.dialed && len(s.live) == 0
		for c, closing := range s.live {
			if !closing {
				s.live[c] = c.closeWrite()
			}
		}
		s.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-s.signal:
		case <-bound.C:
			return errors.New("the lane's connections did not end")
		}
	}
}

// take returns the sends and executions counted since it was last called.
func (s *laneServer) take() (sends, execs int) {
	return int(s.sends.Swap(0)), int(s.execs.Swap(0))
}

// closeWrite closes c's writing side, and reports whether it did: a TLS
// connection's cannot be closed before its handshake.
func (c *h2Conn) closeWrite() bool {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	cw, ok := c.Conn.(interface{ CloseWrite() error })
	return ok && cw.CloseWrite() == nil
}

func (c *h2Conn) writeString(s string) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	io.WriteString(c.Conn, s)
}

// serveH1 answers GETs, which warm a keep-alive connection up, and runs
// every POST it reads whole. The first POST of a request it does not
// answer: it closes the connection, as a server that restarts or times a
// keep-alive connection out does just after running a request.
func (s *laneServer) serveH1(c *h2Conn) {
	br := bufio.NewReader(c)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		io.Copy(io.Discard, req.Body)
		if req.Method == http.MethodGet {
			c.writeString("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
			continue
		}
		s.execs.Add(1)
		if s.sends.Add(1) == 1 {
			return // ended closes the connection without an answer
		}
		c.writeString("HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n")
	}
}

// serveH2 speaks HTTP/2 frame by frame; the first header block of a request
// meets the lane's failure.
func (s *laneServer) serveH2(c *h2Conn) {
	serveFrames(c, func(uint32) {}, func(id uint32) { s.h2Request(c, id) })
}

func (s *laneServer) h2Request(c *h2Conn, id uint32) {
	if s.sends.Add(1) > 1 {
		s.execs.Add(1)
		c.respond(id)
		return
	}
	switch s.first {
	case "protocol": // the request ran; then its stream failed
		s.execs.Add(1)
		c.reset(id, h2ProtocolError)
	case "refuse": // not processed (RFC 9113, section 8.7)
		c.reset(id, wire.H2RefusedStream)
	case "goaway": // no stream of this connection was processed
		c.goAway(id-1, h2NoError, "")
		c.closeWrite()
	}
}

// A raceCell counts what the requests of one shape made of one failure.
type raceCell struct {
	requests, ok, stopped, failed int
	execs                         int
	doubles                       int // executed more than once
	stoppedWritten                int // ErrResendStopped, and yet the stopped send arrived
	firstFailed                   error
}

// guardedBodies and guardedKeys are the shapes of request the race test
// sends: each a request that may not be sent twice.
var (
	guardedBodies = []string{"no body", "GetBody", "no GetBody"}
	guardedKeys   = []string{"no key", "blank Idempotency-Key", "blank X-Idempotency-Key"}
)

func guardedPost(url, body, key string) *http.Request {
	var r io.Reader
	switch body {
	case "GetBody":
		r = strings.NewReader(`{"order":1}`)
	case "no GetBody":
		r = &plainReader{strings.NewReader(`{"order":1}`)}
	}
	req, _ := http.NewRequest(http.MethodPost, url, r)
	switch key {
	case "blank Idempotency-Key":
		req.Header["Idempotency-Key"] = []string{""}
	case "blank X-Idempotency-Key":
		req.Header["X-Idempotency-Key"] = []string{"  "}
	}
	return req
}

// TestGuardNeverTwiceUnderRace sends requests that may not be sent twice
// (POSTs without a key or with a blank one, with and without a body) over
// HTTP/1 and HTTP/2 to real loopback servers whose first answer to each
// is a failure after which net/http resends on its own: an HTTP/1 server
// that reads and runs the request and then closes the reused keep-alive
// connection without answering; HTTP/2 servers that reset the stream with
// PROTOCOL_ERROR after running it, or refuse it with REFUSED_STREAM, or
// send a GOAWAY that says it was not processed. Every later send is run
// and answered. With GOMAXPROCS raised, so that net/http's goroutines race
// the Transport's, no request runs twice, and no request that was told
// ErrResendStopped had its stopped send arrive. Each failure ends every
// request alike: the HTTP/1 one in its error, PROTOCOL_ERROR and GOAWAY in
// ErrResendStopped, REFUSED_STREAM in a success, net/http's resend on the
// refused stream's connection let through.
func TestGuardNeverTwiceUnderRace(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(8))
	const perShape = 70 // per lane: 16 lanes × 9 shapes × 70 = 10,080 requests
	scenarios := []struct {
		name  string
		h2    bool
		first string
		// What each request ends in: "failed" (the error of the one
		// send), "stopped" (ErrResendStopped) or "ok"; and whether it ran.
		want string
		ran  bool
	}{
		{"HTTP/1 reused connection closed after the request ran", false, "close", "failed", true},
		{"HTTP/2 PROTOCOL_ERROR after the request ran", true, "protocol", "stopped", true},
		{"HTTP/2 REFUSED_STREAM", true, "refuse", "ok", true},
		{"HTTP/2 GOAWAY, stream not processed", true, "goaway", "stopped", false},
	}
	const lanes = 4 // per scenario
	type key struct{ scenario, body, key string }
	var mu sync.Mutex
	cells := map[key]*raceCell{}
	var wg sync.WaitGroup
	for _, sc := range scenarios {
		for range lanes {
			srv := newLaneServer(t, sc.h2, sc.first, nil)
			client := func() (*http.Transport, *Transport) {
				base := &http.Transport{DialContext: srv.dial}
				if sc.h2 {
					base.Protocols = new(http.Protocols)
					base.Protocols.SetUnencryptedHTTP2(true)
				}
				return base, New(WithBase(base), WithBackoff(backoff.Constant(0)), WithoutBudget())
			}
			url := "http://" + srv.ln.Addr().String() + "/orders"
			wg.Go(func() {
				base, tr := client()
				defer func() { tr.CloseIdleConnections() }()
				for range perShape {
					for _, body := range guardedBodies {
						for _, k := range guardedKeys {
							if !sc.h2 {
								// A keep-alive connection that has carried
								// a request, for the POST to reuse.
								req, _ := http.NewRequest(http.MethodGet, url, nil)
								resp, err := base.RoundTrip(req)
								if !assert.NoError(t, err) {
									return
								}
								resp.Body.Close()
							}
							resp, err := tr.RoundTrip(guardedPost(url, body, k))
							if resp != nil {
								io.Copy(io.Discard, resp.Body)
								resp.Body.Close()
							}
							// A success ends the request: every send was
							// counted before the answer was written, and
							// none follows it. A failure may leave a send
							// still to arrive: the connections are ended
							// first.
							if err != nil {
								if !assert.NoError(t, srv.drain()) {
									return
								}
								// The next request gets a client of its
								// own: a connection dialed for this one
								// and not used (net/http finishes a dial
								// its request no longer waits for) has
								// been closed by the drain, and net/http
								// keeps a closed HTTP/2 connection that
								// never carried a stream in its pool for
								// up to 5 s, to hand to the next request
								// as its error.
								tr.CloseIdleConnections()
								base, tr = client()
							}
							sends, execs := srv.take()
							mu.Lock()
							c := cells[key{sc.name, body, k}]
							if c == nil {
								c = &raceCell{}
								cells[key{sc.name, body, k}] = c
							}
							c.requests++
							c.execs += execs
							switch {
							case err == nil:
								c.ok++
							case errors.Is(err, ErrResendStopped):
								c.stopped++
								if sends > 1 {
									c.stoppedWritten++
								}
							default:
								c.failed++
								if c.firstFailed == nil {
									c.firstFailed = err
								}
							}
							if execs > 1 {
								c.doubles++
							}
							mu.Unlock()
						}
					}
				}
			})
		}
	}
	wg.Wait()

	var b strings.Builder
	fmt.Fprintf(&b, "\n| failure | body | key | requests | succeeded | ErrResendStopped | other error | executions | run twice | ErrResendStopped, yet sent again |\n|---|---|---|---|---|---|---|---|---|---|\n")
	total, doubles, written := 0, 0, 0
	for _, sc := range scenarios {
		for _, body := range guardedBodies {
			for _, k := range guardedKeys {
				c := cells[key{sc.name, body, k}]
				if !assert.NotNil(t, c) {
					continue
				}
				fmt.Fprintf(&b, "| %s | %s | %s | %d | %d | %d | %d | %d | %d | %d |\n",
					sc.name, body, k, c.requests, c.ok, c.stopped, c.failed, c.execs, c.doubles, c.stoppedWritten)
				total += c.requests
				doubles += c.doubles
				written += c.stoppedWritten
				outcomes := map[string]int{"ok": c.ok, "stopped": c.stopped, "failed": c.failed}
				assert.Equal(t, c.requests, outcomes[sc.want], "%s, %s, %s: all %s (the first error other than ErrResendStopped: %v)", sc.name, body, k, sc.want, c.firstFailed)
				if sc.ran {
					assert.Equal(t, c.requests, c.execs, "%s, %s, %s: each ran once", sc.name, body, k)
				} else {
					assert.Zero(t, c.execs, "%s, %s, %s: none ran", sc.name, body, k)
				}
			}
		}
	}
	t.Log(b.String())
	assert.GreaterOrEqual(t, total, 10000)
	assert.Zero(t, doubles, "requests run twice")
	assert.Zero(t, written, "requests told ErrResendStopped whose stopped send arrived")
}
