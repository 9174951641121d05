package scenario

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
)

// This file holds the loopback servers of the rescue matrix that
// net/http/httptest does not provide: an HTTP proxy for CONNECT, a listener
// that holds its first connection silent, and a minimal HTTP/2 server that
// refuses a stream or sends a GOAWAY.

// A connectProxy is an HTTP proxy that answers the first refuse CONNECTs
// with status, or every one when refuse is negative, and tunnels the
// others.
type connectProxy struct {
	*httptest.Server
	connects atomic.Int64
	tunnels  sync.WaitGroup
}

func newConnectProxy(refuse int64, status int) *connectProxy {
	p := &connectProxy{}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodConnect {
			http.Error(w, "CONNECT only", http.StatusMethodNotAllowed)
			return
		}
		if n := p.connects.Add(1); refuse < 0 || n <= refuse {
			if status == http.StatusProxyAuthRequired {
				w.Header().Set("Proxy-Authenticate", `Basic realm="egress"`)
			}
			w.WriteHeader(status)
			return
		}
		dst, err := net.Dial("tcp", r.Host)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		w.WriteHeader(http.StatusOK)
		conn, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			dst.Close()
			return
		}
		p.tunnels.Go(func() {
			_, _ = io.Copy(dst, buf)
			dst.Close()
		})
		p.tunnels.Go(func() {
			_, _ = io.Copy(conn, dst)
			conn.Close()
		})
	}))
	return p
}

func (p *connectProxy) close() {
	p.CloseClientConnections()
	p.Close()
	p.tunnels.Wait()
}

// silentFirst is a listener that accepts its first connection and never
// passes it on, so that the client's TLS handshake on it gets no answer;
// the connection is closed with the listener.
type silentFirst struct {
	net.Listener
	mu   sync.Mutex
	held net.Conn // the first connection, once accepted
	done bool     // the first connection was accepted
}

func (l *silentFirst) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		l.mu.Lock()
		first := !l.done
		if first {
			l.done, l.held = true, c
		}
		l.mu.Unlock()
		if !first {
			return c, nil
		}
	}
}

func (l *silentFirst) Close() error {
	l.mu.Lock()
	if l.held != nil {
		l.held.Close()
	}
	l.mu.Unlock()
	return l.Listener.Close()
}

// An h2Server is a minimal HTTP/2 server over cleartext (prior knowledge)
// that answers 200 to every request but the first, to which it does what
// first says: "refuse" resets the stream with REFUSED_STREAM, "goaway"
// sends a GOAWAY that says no stream was processed, "protocol" runs the
// request and then resets the stream with PROTOCOL_ERROR. It counts the requests
// it answered, its executions. Frames are written by hand (RFC 9113): the
// few it needs do not warrant a dependency.
type h2Server struct {
	URL      string
	l        net.Listener
	first    string
	requests atomic.Int64
	execs    atomic.Int64
	wg       sync.WaitGroup
	mu       sync.Mutex
	conns    []net.Conn
}

// HTTP/2 frame types and flags used by h2Server.
const (
	h2Data         = 0x0
	h2Headers      = 0x1
	h2RSTStream    = 0x3
	h2Settings     = 0x4
	h2Ping         = 0x6
	h2GoAway       = 0x7
	h2EndStream    = 0x1
	h2Ack          = 0x1
	h2EndHeaders   = 0x4
	h2RefusedCode  = 0x7
	h2ProtocolCode = 0x1
	h2StatusOK     = 0x88 // HPACK: the static table's ":status: 200"
	h2ClientPrefix = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
)

func newH2Server(first string) *h2Server {
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		panic("scenario: listening on 127.0.0.1: " + err.Error())
	}
	s := &h2Server{URL: "http://" + l.Addr().String(), l: l, first: first}
	s.wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns = append(s.conns, c)
			s.mu.Unlock()
			s.wg.Go(func() { s.serve(c) })
		}
	})
	return s
}

func (s *h2Server) close() {
	s.l.Close()
	s.mu.Lock()
	for _, c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

func writeFrame(w io.Writer, typ, flags byte, stream uint32, payload []byte) error {
	var h [9]byte
	h[0], h[1], h[2] = byte(len(payload)>>16), byte(len(payload)>>8), byte(len(payload))
	h[3], h[4] = typ, flags
	binary.BigEndian.PutUint32(h[5:], stream&0x7fffffff)
	_, err := w.Write(append(h[:], payload...))
	return err
}

func (s *h2Server) serve(c net.Conn) {
	defer c.Close()
	pre := make([]byte, len(h2ClientPrefix))
	if _, err := io.ReadFull(c, pre); err != nil || string(pre) != h2ClientPrefix {
		return
	}
	if writeFrame(c, h2Settings, 0, 0, nil) != nil {
		return
	}
	var h [9]byte
	for {
		if _, err := io.ReadFull(c, h[:]); err != nil {
			return
		}
		n := int(h[0])<<16 | int(h[1])<<8 | int(h[2])
		typ, flags := h[3], h[4]
		stream := binary.BigEndian.Uint32(h[5:]) & 0x7fffffff
		payload := make([]byte, n)
		if _, err := io.ReadFull(c, payload); err != nil {
			return
		}
		var err error
		switch {
		case typ == h2Settings && flags&h2Ack == 0:
			err = writeFrame(c, h2Settings, h2Ack, 0, nil)
		case typ == h2Ping && flags&h2Ack == 0:
			err = writeFrame(c, h2Ping, h2Ack, 0, payload)
		case (typ == h2Headers || typ == h2Data) && flags&h2EndStream != 0:
			err = s.answer(c, stream)
		}
		if err != nil {
			return
		}
	}
}

// answer answers the request on stream, whose last frame has arrived.
func (s *h2Server) answer(c net.Conn, stream uint32) error {
	if s.requests.Add(1) == 1 {
		switch s.first {
		case "refuse":
			return writeFrame(c, h2RSTStream, 0, stream, binary.BigEndian.AppendUint32(nil, h2RefusedCode))
		case "goaway":
			return writeFrame(c, h2GoAway, 0, 0, make([]byte, 8)) // last stream 0, NO_ERROR
		case "protocol":
			s.execs.Add(1) // the request ran, and then the stream failed
			return writeFrame(c, h2RSTStream, 0, stream, binary.BigEndian.AppendUint32(nil, h2ProtocolCode))
		}
	}
	s.execs.Add(1)
	if err := writeFrame(c, h2Headers, h2EndHeaders, stream, []byte{h2StatusOK}); err != nil {
		return err
	}
	return writeFrame(c, h2Data, h2EndStream, stream, []byte("ok"))
}

// h2cBase returns a base transport that speaks HTTP/2 over cleartext only.
func h2cBase() *http.Transport {
	t := freshBase()
	t.Protocols = new(http.Protocols)
	t.Protocols.SetUnencryptedHTTP2(true)
	return t
}

// dialFirst returns a DialContext that sends the first dial to first
// instead of the address asked for, and every later dial where it was
// asked.
func dialFirst(first func(ctx context.Context, d *net.Dialer) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	var n atomic.Int64
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if n.Add(1) == 1 {
			return first(ctx, &d)
		}
		return d.DialContext(ctx, network, addr)
	}
}
