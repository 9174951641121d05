package retryhttp

import (
	"bufio"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp/hedge"
)

// A dropServer is an HTTP/1 server on loopback that reads each request
// whole and answers it with 200, except the requests to drop: their
// connection is closed once the request is read, without a byte of an
// answer, as a server that dies or restarts mid-request does.
type dropServer struct {
	ln   net.Listener
	url  string
	drop func(path string, reused bool) bool
	mu   sync.Mutex
	seen []seenRequest
	wg   sync.WaitGroup
}

// A seenRequest is a request a dropServer read.
type seenRequest struct {
	path   string
	key    string // Idempotency-Key
	body   string
	reused bool // it came on a connection that had carried a request before
}

func newDropServer(t *testing.T, drop func(path string, reused bool) bool) *dropServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := &dropServer{ln: ln, url: "http://" + ln.Addr().String(), drop: drop}
	s.wg.Add(1)
	go s.serve()
	t.Cleanup(s.close)
	return s
}

func (s *dropServer) serve() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.wg.Add(1)
		go s.conn(c)
	}
}

func (s *dropServer) conn(c net.Conn) {
	defer s.wg.Done()
	defer c.Close()
	br := bufio.NewReader(c)
	for n := 0; ; n++ {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		body, err := io.ReadAll(req.Body)
		if err != nil {
			return
		}
		s.mu.Lock()
		s.seen = append(s.seen, seenRequest{req.URL.Path, req.Header.Get("Idempotency-Key"), string(body), n > 0})
		s.mu.Unlock()
		if s.drop(req.URL.Path, n > 0) {
			return
		}
		if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"); err != nil {
			return
		}
	}
}

// requests returns the requests read for path, in order.
func (s *dropServer) requests(path string) []seenRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []seenRequest
	for _, r := range s.seen {
		if r.path == path {
			out = append(out, r)
		}
	}
	return out
}

func (s *dropServer) close() {
	s.ln.Close()
	s.wg.Wait()
}

// dropFirstReused drops the first request to /call that comes on a reused
// connection.
func dropFirstReused() func(string, bool) bool {
	var once sync.Once
	return func(path string, reused bool) bool {
		dropped := false
		if path == "/call" && reused {
			once.Do(func() { dropped = true })
		}
		return dropped
	}
}

// TestBaseResendIsCounted proves that a send net/http makes again by
// itself is counted as the server sees it: a request written to a reused
// keep-alive connection that the server closes after reading it, without
// answering, is sent again by net/http on a new connection when it is
// replayable (a GET, a POST with an idempotency key and GetBody). The
// server received two requests; Attempts says 2, a hook sees the resend,
// and the log has it at DEBUG. A POST without a key is not sent again:
// one request, one attempt.
func TestBaseResendIsCounted(t *testing.T) {
	tests := []struct {
		name    string
		method  string
		key     string
		body    string
		sends   int // requests the server receives, and Attempts
		resends int // of them, net/http's own
	}{
		{"GET", http.MethodGet, "", "", 2, 1},
		{"POST with a key", http.MethodPost, "k-1", `{"order":1}`, 2, 1},
		{"POST without a key", http.MethodPost, "", `{"order":1}`, 1, 0},
	}
	for _, tt := range tests {
		for _, hedged := range []bool{false, true} {
			t.Run(tt.name+"/hedging="+strconv.FormatBool(hedged), func(t *testing.T) {
				srv := newDropServer(t, dropFirstReused())
				logs := &logRecorder{}
				var events []RetryEvent
				opts := []Option{WithLogger(slog.New(logs)), WithOnRetry(func(e RetryEvent) { events = append(events, e) })}
				if hedged {
					// The hooks and the log trace every attempt, hedged or not.
					opts = append(opts, WithHedging())
				}
				tr := New(opts...)
				defer tr.CloseIdleConnections()

				// A first request leaves a keep-alive connection idle.
				resp, err := tr.RoundTrip(get(t, srv.url+"/warm"))
				require.NoError(t, err)
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				logs.take()

				var body io.Reader
				if tt.body != "" {
					body = strings.NewReader(tt.body)
				}
				req, err := http.NewRequest(tt.method, srv.url+"/call", body)
				require.NoError(t, err)
				if tt.key != "" {
					req.Header.Set("Idempotency-Key", tt.key)
				}
				resp, err = tr.RoundTrip(req)
				seen := srv.requests("/call")
				require.NotEmpty(t, seen)
				assert.True(t, seen[0].reused, "the first send went out on the reused connection")
				assert.Len(t, seen, tt.sends, "requests the server received")
				for _, r := range seen {
					assert.Equal(t, tt.key, r.key)
					assert.Equal(t, tt.body, r.body)
				}
				if tt.resends == 0 {
					var rerr *Error
					require.ErrorAs(t, err, &rerr)
					assert.Equal(t, tt.sends, rerr.Attempts)
				} else {
					require.NoError(t, err)
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					assert.Equal(t, http.StatusOK, resp.StatusCode)
					assert.Equal(t, tt.sends, Attempts(resp))
				}
				server := netip.MustParseAddrPort(srv.ln.Addr().String())
				var want []RetryEvent
				for range tt.resends {
					want = append(want, RetryEvent{Request: req, Attempt: 1, Peer: server, BaseResend: true})
				}
				assert.Equal(t, want, events, "retry events")
				debug := atLevel(logs.take(), slog.LevelDebug)
				resent := withMessage(debug, "retryhttp: resent by the base")
				assert.Len(t, resent, tt.resends)
				for _, r := range resent {
					v, _ := attr(r, "attempt")
					assert.Equal(t, int64(1), v.Int64())
					v, _ = attr(r, "network.peer.port")
					assert.Equal(t, int64(server.Port()), v.Int64())
				}
				assert.Len(t, withMessage(debug, "retryhttp: attempt"), 1)
			})
		}
	}
}

// TestHedgedBaseResendIsCounted proves that a hedged request's first
// attempt counts net/http's resends without a hook or a log to trace it:
// whether the host's delay is known (hedge.Delay) or not yet (its first
// requests), a GET or a keyed POST that net/http sends again after a
// reused connection dropped it reaches the server twice, and Attempts
// says 2. It said 1: a request that may be hedged ran its first attempt
// untraced.
func TestHedgedBaseResendIsCounted(t *testing.T) {
	for _, delay := range []string{"known", "not yet known"} {
		for _, key := range []string{"", "k-1"} {
			t.Run(delay+"/key="+key, func(t *testing.T) {
				srv := newDropServer(t, dropFirstReused())
				opts := []hedge.Option{}
				if delay == "known" {
					opts = append(opts, hedge.Delay(time.Hour))
				}
				tr := New(WithHedging(opts...))
				defer tr.CloseIdleConnections()
				resp, err := tr.RoundTrip(get(t, srv.url+"/warm"))
				require.NoError(t, err)
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()

				method, body := http.MethodGet, io.Reader(nil)
				if key != "" {
					method, body = http.MethodPost, strings.NewReader(`{"order":1}`)
				}
				req, err := http.NewRequest(method, srv.url+"/call", body)
				require.NoError(t, err)
				if key != "" {
					req.Header.Set("Idempotency-Key", key)
				}
				resp, err = tr.RoundTrip(req)
				require.NoError(t, err)
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				seen := srv.requests("/call")
				require.Len(t, seen, 2, "requests the server received")
				assert.True(t, seen[0].reused, "the first send went out on the reused connection")
				assert.Equal(t, len(seen), Attempts(resp), "Attempts against the server's count")
			})
		}
	}
}

// TestBaseResendOverHTTP2IsCounted proves the same of net/http's HTTP/2
// resends: a stream refused (REFUSED_STREAM) and a connection going away
// (GOAWAY) before any answer, each sent again by net/http on its own. The
// server received two header blocks and ran the request once; Attempts
// says 2 and a hook sees the resend. A body too large for the stream's
// flow-control window (the server grants no more) is cut short by the
// failure: its header block went out, and it counts.
func TestBaseResendOverHTTP2IsCounted(t *testing.T) {
	large := strings.Repeat("x", 1<<20)
	for _, first := range []string{"refuse", "goaway"} {
		for _, tt := range []struct {
			name, method, body string
		}{
			{"GET", http.MethodGet, ""},
			{"POST with a key", http.MethodPost, `{"order":1}`},
			{"POST with a key and a large body", http.MethodPost, large},
		} {
			t.Run(first+"/"+tt.name, func(t *testing.T) {
				srv := newLaneServer(t, true, first, nil)
				var events []RetryEvent
				tr := New(WithBase(&http.Transport{DialContext: srv.dial, Protocols: h2cTransport().Protocols}),
					WithOnRetry(func(e RetryEvent) { events = append(events, e) }))
				defer tr.CloseIdleConnections()
				var body io.Reader
				if tt.body != "" {
					body = strings.NewReader(tt.body)
				}
				req, err := http.NewRequest(tt.method, "http://"+srv.ln.Addr().String()+"/orders", body)
				require.NoError(t, err)
				req.Header.Set("Idempotency-Key", "k-1")
				resp, err := tr.RoundTrip(req)
				require.NoError(t, err)
				resp.Body.Close()
				assert.Equal(t, http.StatusOK, resp.StatusCode)
				assert.Equal(t, 2, Attempts(resp))
				require.Len(t, events, 1)
				assert.True(t, events[0].BaseResend)
				assert.Equal(t, 1, events[0].Attempt)
				require.NoError(t, srv.drain())
				sends, execs := srv.take()
				assert.Equal(t, 2, sends, "header blocks the server received")
				assert.Equal(t, 1, execs)
			})
		}
	}
}
