package retryhttp

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/http"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/retryhttp/retryhttp/internal/wire"
	"github.com/stretchr/testify/require"
)

// HTTP/2 frame types and flags (RFC 9113, section 6) used by h2Server.
const (
	frameData         = 0x0
	frameHeaders      = 0x1
	frameRSTStream    = 0x3
	frameSettings     = 0x4
	framePing         = 0x6
	frameGoAway       = 0x7
	frameContinuation = 0x9

	flagEndStream  = 0x1
	flagAck        = 0x1
	flagEndHeaders = 0x4

	h2ProtocolError = 0x1
	h2NoError       = 0x0
)

// h2Server is an HTTP/2 server over cleartext (h2c with prior knowledge)
// written frame by frame, so that tests can misbehave on the wire exactly
// as they need: reset a stream with any code, send a GOAWAY whatever its
// last stream ID, or stop reading. It counts the request header blocks it
// receives: each is one send of a request, which a server would execute.
type h2Server struct {
	ln net.Listener
	// onRequest answers the request whose header block just arrived on
	// stream id of c, the n-th request the server received (from 1). It
	// runs on the connection's goroutine.
	onRequest func(c *h2Conn, id uint32, n int)
	// onAccept, if set, runs first on each new connection, before the
	// server reads from it.
	onAccept func(c *h2Conn)

	mu       sync.Mutex
	requests int
	conns    []*h2Conn
	closed   bool             // close has run: a connection accepted now is closed at once
	settled  map[*h2Conn]bool // a header block arrived whole, or the connection ended
	changed  chan struct{}    // a connection settled
	wg       sync.WaitGroup
}

type h2Conn struct {
	net.Conn
	wmu sync.Mutex
}

func newH2Server(t *testing.T, onRequest func(c *h2Conn, id uint32, n int)) *h2Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := &h2Server{ln: ln, onRequest: onRequest, settled: map[*h2Conn]bool{}, changed: make(chan struct{}, 1)}
	t.Cleanup(s.close)
	return s
}

func (s *h2Server) start() *h2Server {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			nc, err := s.ln.Accept()
			if err != nil {
				return
			}
			c := &h2Conn{Conn: nc}
			s.mu.Lock()
			if s.closed {
				// Accepted just as the server closed: close did not see it.
				s.mu.Unlock()
				nc.Close()
				return
			}
			s.conns = append(s.conns, c)
			s.mu.Unlock()
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer c.Close()
				defer s.settle(c)
				s.serve(c)
			}()
		}
	}()
	return s
}

func (s *h2Server) url() string { return "http://" + s.ln.Addr().String() + "/" }

// settle records that c has delivered a whole header block or ended.
func (s *h2Server) settle(c *h2Conn) {
	s.mu.Lock()
	s.settled[c] = true
	s.mu.Unlock()
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// waitSettled waits until every connection accepted so far has delivered a
// whole header block or ended, and reports whether that happened within
// limit, which only bounds a test that would otherwise hang.
func (s *h2Server) waitSettled(limit time.Duration) bool {
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		done := len(s.settled) == len(s.conns)
		s.mu.Unlock()
		if done {
			return true
		}
		select {
		case <-s.changed:
		case <-deadline.C:
			return false
		}
	}
}

// received returns how many request header blocks arrived.
func (s *h2Server) received() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests
}

func (s *h2Server) close() {
	s.ln.Close()
	s.mu.Lock()
	s.closed = true
	for _, c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

func (s *h2Server) serve(c *h2Conn) {
	if s.onAccept != nil {
		s.onAccept(c)
	}
	serveFrames(c, func(uint32) {
		s.mu.Lock()
		s.requests++
		s.mu.Unlock()
	}, func(id uint32) {
		s.settle(c)
		if s.onRequest != nil {
			s.mu.Lock()
			n := s.requests
			s.mu.Unlock()
			s.onRequest(c, id, n)
		}
	})
}

// serveFrames reads c as an HTTP/2 server does, acknowledging SETTINGS and
// PING, until it fails. It calls begin when a request's header block starts
// to arrive on stream id, and end once the block has arrived whole.
func serveFrames(c *h2Conn, begin, end func(id uint32)) {
	r := bufio.NewReader(c)
	preface := make([]byte, len(http2Preface))
	if _, err := io.ReadFull(r, preface); err != nil || string(preface) != http2Preface {
		return
	}
	c.writeFrame(frameSettings, 0, 0, nil)
	var block uint32 // the stream whose header block is being received
	for {
		typ, flags, id, payload, err := readFrame(r)
		if err != nil {
			return
		}
		switch typ {
		case frameSettings:
			if flags&flagAck == 0 {
				c.writeFrame(frameSettings, flagAck, 0, nil)
			}
		case framePing:
			if flags&flagAck == 0 {
				c.writeFrame(framePing, flagAck, 0, payload)
			}
		case frameHeaders:
			block = id
			begin(id)
			fallthrough
		case frameContinuation:
			if flags&flagEndHeaders != 0 {
				end(block)
			}
		}
	}
}

const http2Preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

func readFrame(r io.Reader) (typ, flags byte, id uint32, payload []byte, err error) {
	var h [9]byte
	if _, err = io.ReadFull(r, h[:]); err != nil {
		return
	}
	n := int(h[0])<<16 | int(h[1])<<8 | int(h[2])
	payload = make([]byte, n)
	_, err = io.ReadFull(r, payload)
	return h[3], h[4], binary.BigEndian.Uint32(h[5:]) & 0x7fffffff, payload, err
}

func (c *h2Conn) writeFrame(typ, flags byte, id uint32, payload []byte) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	h := []byte{byte(len(payload) >> 16), byte(len(payload) >> 8), byte(len(payload)), typ, flags, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(h[5:], id)
	c.Write(append(h, payload...))
}

// respond answers stream id with 200 and no body: ":status 200" is entry 8
// of HPACK's static table.
func (c *h2Conn) respond(id uint32) {
	c.writeFrame(frameHeaders, flagEndHeaders|flagEndStream, id, []byte{0x88})
}

func (c *h2Conn) reset(id, code uint32) {
	c.writeFrame(frameRSTStream, 0, id, binary.BigEndian.AppendUint32(nil, code))
}

func (c *h2Conn) goAway(last, code uint32, debug string) {
	p := binary.BigEndian.AppendUint32(nil, last)
	p = binary.BigEndian.AppendUint32(p, code)
	c.writeFrame(frameGoAway, 0, 0, append(p, debug...))
}

// h2cTransport is a net/http Transport that speaks HTTP/2 over cleartext
// with prior knowledge, as a client of a gRPC or service-mesh backend does.
func h2cTransport() *http.Transport {
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	return &http.Transport{Protocols: &p}
}

// h2StreamError returns an error of the type net/http's HTTP/2 transport
// reports a stream reset with, carrying code. The type is unexported, so it
// is taken from a real reset by h2Server and its Code set by reflection.
func h2StreamError(t *testing.T, code uint32) error {
	t.Helper()
	srv := newH2Server(t, func(c *h2Conn, id uint32, _ int) { c.reset(id, wire.H2InternalError) }).start()
	tr := h2cTransport()
	defer tr.CloseIdleConnections()
	req, err := http.NewRequest(http.MethodGet, srv.url(), nil)
	require.NoError(t, err)
	_, err = tr.RoundTrip(req)
	require.Error(t, err)
	for e := err; e != nil; e = errors.Unwrap(e) {
		v := reflect.ValueOf(e)
		if v.Type().Name() == "http2StreamError" {
			p := reflect.New(v.Type()).Elem()
			p.Set(v)
			p.FieldByName("Code").SetUint(uint64(code))
			return p.Interface().(error)
		}
	}
	t.Fatalf("no HTTP/2 stream error in %v", err)
	return nil
}
