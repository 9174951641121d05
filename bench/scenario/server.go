package scenario

import (
	"crypto/x509"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"time"
)

// IDHeader carries the identity of a logical request, the same on every
// attempt, so that the server can tell a retry from a new request.
const IDHeader = "X-Request-Id"

// A Behaviour answers one attempt. attempt is the number of arrivals of the
// request's IDHeader so far, this one included (1 for a request without
// one).
type Behaviour func(w http.ResponseWriter, r *http.Request, attempt int)

// A Server is a loopback HTTP server that counts what reaches it: requests
// (every attempt that reaches the handler), connections (every new
// connection), over TLS the handshakes it completed, and the arrival times
// of each logical request's attempts.
type Server struct {
	URL string

	srv        *httptest.Server
	requests   atomic.Int64
	conns      atomic.Int64
	handshakes *handshakeCounter // nil in the clear

	mu   sync.Mutex
	seen map[string][]time.Time
}

// NewServer starts a Server on 127.0.0.1 that answers with b.
func NewServer(b Behaviour) *Server { return newServer(b, cleartext) }

// newServer starts a Server on 127.0.0.1 that answers with b over w; over
// TLS, with httptest's certificate, which RootCAs trusts.
func newServer(b Behaviour, w wire) *Server {
	s := &Server{seen: make(map[string][]time.Time)}
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		b(w, r, s.arrive(r.Header.Get(IDHeader)))
	}))
	if w != cleartext {
		s.handshakes = newHandshakeCounter()
	}
	s.URL = startLoopback(s.srv, w, &s.conns, s.handshakes)
	return s
}

// quiet is the error log of the TLS servers: clients that close a
// connection before its handshake ends (net/http cancels a dial no request
// waits for any more) are part of the scenarios, counted among the
// connections but not the handshakes.
var quiet = log.New(io.Discard, "", 0)

// A wire is how clients reach a server: HTTP/1.1 in the clear, or over TLS
// with HTTP/1.1 or HTTP/2.
type wire int

const (
	cleartext wire = iota
	tlsHTTP1
	tlsHTTP2
)

func (w wire) String() string {
	return [...]string{"HTTP/1.1 in the clear", "HTTP/1.1", "HTTP/2"}[w]
}

// startLoopback starts srv on 127.0.0.1 over w, counting its new
// connections in conns and, over TLS, its handshakes in hs, and returns
// its URL.
func startLoopback(srv *httptest.Server, w wire, conns *atomic.Int64, hs *handshakeCounter) string {
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		panic("scenario: listening on 127.0.0.1: " + err.Error())
	}
	srv.Listener.Close()
	srv.Listener = l
	srv.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		if state == http.StateNew {
			conns.Add(1)
		}
	}
	if w == cleartext {
		srv.Start()
		return srv.URL
	}
	hs.watch(srv.Config)
	srv.Config.ErrorLog = quiet
	srv.EnableHTTP2 = w == tlsHTTP2
	srv.StartTLS()
	return srv.URL
}

// arrive records an arrival of id and returns its number.
func (s *Server) arrive(id string) int {
	if id == "" {
		return 1
	}
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen[id] = append(s.seen[id], now)
	return len(s.seen[id])
}

// Requests returns the number of requests that reached the handler.
func (s *Server) Requests() int64 { return s.requests.Load() }

// Conns returns the number of connections the server accepted.
func (s *Server) Conns() int64 { return s.conns.Load() }

// Handshakes returns the TLS handshakes the server completed, none in the
// clear; after Close, every one.
func (s *Server) Handshakes() Handshakes { return s.handshakes.count() }

// RootCAs returns a pool that trusts the server's certificate, nil in the
// clear.
func (s *Server) RootCAs() *x509.CertPool {
	if s.handshakes == nil {
		return nil
	}
	pool := x509.NewCertPool()
	pool.AddCert(s.srv.Certificate())
	return pool
}

// Arrivals returns a copy of the arrival times of every logical request.
func (s *Server) Arrivals() map[string][]time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := make(map[string][]time.Time, len(s.seen))
	for id, ts := range s.seen {
		m[id] = append([]time.Time(nil), ts...)
	}
	return m
}

// Close closes the server and every connection to it, and waits for its
// handlers to return.
func (s *Server) Close() {
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// Fail answers code with a short text body, as http.Error does.
func Fail(code int) Behaviour {
	return func(w http.ResponseWriter, _ *http.Request, _ int) {
		http.Error(w, http.StatusText(code), code)
	}
}

// OK answers 200 with a short body.
func OK(w http.ResponseWriter, _ *http.Request, _ int) {
	_, _ = w.Write([]byte("ok\n"))
}

// FailFirst answers code to the first n attempts of each logical request,
// and 200 after.
func FailFirst(n, code int) Behaviour {
	fail := Fail(code)
	return func(w http.ResponseWriter, r *http.Request, attempt int) {
		if attempt <= n {
			fail(w, r, attempt)
			return
		}
		OK(w, r, attempt)
	}
}

// FailRandomly answers 503 to a share p of attempts, decided by a hash of
// seed, the request's identity and the attempt number, so that every library
// meets the same faults whatever the order in which its requests arrive.
func FailRandomly(seed uint64, p float64) Behaviour {
	fail := Fail(http.StatusServiceUnavailable)
	return func(w http.ResponseWriter, r *http.Request, attempt int) {
		if unitHash(seed, r.Header.Get(IDHeader), attempt) < p {
			fail(w, r, attempt)
			return
		}
		OK(w, r, attempt)
	}
}

// unitHash maps (seed, id, attempt) to a number uniform in [0, 1).
func unitHash(seed uint64, id string, attempt int) float64 {
	h := seed ^ 0xcbf29ce484222325
	for i := 0; i < len(id); i++ {
		h = (h ^ uint64(id[i])) * 0x100000001b3
	}
	h ^= uint64(attempt) * 0x9e3779b97f4a7c15
	// splitmix64's finaliser, for well-mixed low bits.
	h = (h ^ h>>30) * 0xbf58476d1ce4e5b9
	h = (h ^ h>>27) * 0x94d049bb133111eb
	h ^= h >> 31
	return float64(h>>11) / (1 << 53)
}

// FailUntil answers 503 to every attempt that arrives before the time
// healthy returns, and 200 after it.
func FailUntil(healthy func() time.Time) Behaviour {
	fail := Fail(http.StatusServiceUnavailable)
	return func(w http.ResponseWriter, r *http.Request, attempt int) {
		if time.Now().Before(healthy()) {
			fail(w, r, attempt)
			return
		}
		OK(w, r, attempt)
	}
}

// ThrottleFirst answers the first attempt of each logical request with 429
// and "Retry-After: seconds", and 200 after.
func ThrottleFirst(seconds string) Behaviour {
	return func(w http.ResponseWriter, r *http.Request, attempt int) {
		if attempt == 1 {
			w.Header().Set("Retry-After", seconds)
			http.Error(w, http.StatusText(http.StatusTooManyRequests), http.StatusTooManyRequests)
			return
		}
		OK(w, r, attempt)
	}
}

// ResetFirst reads the whole request and then, on the first attempt of each
// logical request, drops the connection with a TCP reset (SO_LINGER 0)
// instead of answering; later attempts get 200.
func ResetFirst(w http.ResponseWriter, r *http.Request, attempt int) {
	_, _ = io.Copy(io.Discard, r.Body)
	if attempt > 1 {
		OK(w, r, attempt)
		return
	}
	conn, _, err := w.(http.Hijacker).Hijack()
	if err != nil {
		panic("scenario: hijacking a connection: " + err.Error())
	}
	if tcp, ok := conn.(*net.TCPConn); ok {
		_ = tcp.SetLinger(0)
	}
	conn.Close()
}
