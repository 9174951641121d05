package retryhttp

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp/backoff"
	"github.com/retryhttp/retryhttp/classify"
)

// misdirecting answers its first n attempts 421 Misdirected Request without
// running the request, and the others 200, running it. It records each
// attempt's client address and body.
type misdirecting struct {
	n      int
	mu     sync.Mutex
	addrs  []string
	bodies []string
	execs  atomic.Int32
}

func (m *misdirecting) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	m.mu.Lock()
	m.addrs = append(m.addrs, r.RemoteAddr)
	m.bodies = append(m.bodies, string(body))
	i := len(m.addrs)
	m.mu.Unlock()
	if i <= m.n {
		http.Error(w, "misdirected", http.StatusMisdirectedRequest)
		return
	}
	m.execs.Add(1)
	_, _ = io.WriteString(w, "ok")
}

// attempts returns the client addresses and bodies of the attempts so far.
func (m *misdirecting) attempts() ([]string, []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.addrs...), append([]string(nil), m.bodies...)
}

// events records the delays of a Transport's retries and the reasons of its
// give-ups.
type events struct {
	mu      sync.Mutex
	delays  []time.Duration
	reasons []GiveUpReason
}

func (e *events) options() []Option {
	return []Option{
		WithOnRetry(func(r RetryEvent) {
			e.mu.Lock()
			defer e.mu.Unlock()
			e.delays = append(e.delays, r.Delay)
		}),
		WithOnGiveUp(func(g GiveUpEvent) {
			e.mu.Lock()
			defer e.mu.Unlock()
			e.reasons = append(e.reasons, g.Reason)
		}),
	}
}

// TestMisdirectedRetriedOnANewConnection proves, over HTTP/1.1 and HTTP/2
// at a loopback TLS server and through the default base, that a 421 is
// retried at once, whatever the method (a POST without a key included), on
// a connection other than the one that answered it, which resumes the TLS
// session; and that a second 421 is returned as it is.
func TestMisdirectedRetriedOnANewConnection(t *testing.T) {
	for _, h2 := range []bool{false, true} {
		for _, tc := range []struct {
			name       string
			method     string
			misdirect  int
			wantStatus int
			wantBody   string
			wantExecs  int32
			wantReason []GiveUpReason
		}{
			{"GET: 421, then 200", http.MethodGet, 1, http.StatusOK, "ok", 1, nil},
			{"POST without a key: 421, then 200", http.MethodPost, 1, http.StatusOK, "ok", 1, nil},
			{"GET: 421 twice", http.MethodGet, 2, http.StatusMisdirectedRequest, "misdirected\n", 0, []GiveUpReason{GiveUpMisdirected}},
			{"POST without a key: 421 twice", http.MethodPost, 2, http.StatusMisdirectedRequest, "misdirected\n", 0, []GiveUpReason{GiveUpMisdirected}},
		} {
			proto := map[bool]string{false: "HTTP/1.1", true: "HTTP/2"}[h2]
			t.Run(proto+"/"+tc.name, func(t *testing.T) {
				m := &misdirecting{n: tc.misdirect}
				srv := newTLSServer(t, h2, m)
				b := defaultBase()
				srv.trust(b)
				defer b.CloseIdleConnections()
				var ev events
				// A backoff of an hour: a retry that waited for it would
				// not fit the request's deadline, and would not be sent.
				rt := newTestTransport(b, 0.5, append(ev.options(), WithBackoff(backoff.Constant(time.Hour)))...)
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				var body io.Reader
				if tc.method == http.MethodPost {
					body = strings.NewReader("order 42")
				}
				req, err := http.NewRequestWithContext(ctx, tc.method, srv.URL, body)
				require.NoError(t, err)

				resp, err := rt.RoundTrip(req)
				require.NoError(t, err)
				got, err := io.ReadAll(resp.Body)
				require.NoError(t, err)
				resp.Body.Close()

				assert.Equal(t, tc.wantStatus, resp.StatusCode)
				assert.Equal(t, tc.wantBody, string(got))
				assert.Equal(t, map[bool]int{false: 1, true: 2}[h2], resp.ProtoMajor, "protocol")
				assert.Equal(t, 2, Attempts(resp), "attempts")
				assert.Equal(t, tc.wantExecs, m.execs.Load(), "executions")
				addrs, bodies := m.attempts()
				require.Len(t, addrs, 2)
				assert.NotEqual(t, addrs[0], addrs[1], "the retry's connection")
				assert.Equal(t, bodies[0], bodies[1], "the retry's body")
				assert.EqualValues(t, 2, srv.conns.Load(), "connections")
				assert.EqualValues(t, 1, srv.full.Load(), "full handshakes")
				assert.EqualValues(t, 1, srv.resumed.Load(), "resumed handshakes")
				ev.mu.Lock()
				defer ev.mu.Unlock()
				assert.Equal(t, []time.Duration{0}, ev.delays, "the retry's delay")
				assert.Equal(t, tc.wantReason, ev.reasons)
			})
		}
	}
}

// TestMisdirectedLeavesOtherStreams proves that over HTTP/2 the retry of a
// 421 leaves the connection that answered it to the requests it carries:
// one in flight on it when the 421 arrives completes there.
func TestMisdirectedLeavesOtherStreams(t *testing.T) {
	arrived, release := make(chan struct{}), make(chan struct{})
	m := &misdirecting{n: 1}
	srv := newTLSServer(t, true, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			close(arrived)
			<-release
			_, _ = io.WriteString(w, "slow")
			return
		}
		m.ServeHTTP(w, r)
	}))
	b := defaultBase()
	srv.trust(b)
	defer b.CloseIdleConnections()
	rt := newTestTransport(b, 0)

	type result struct {
		status int
		body   string
		err    error
	}
	slow := make(chan result, 1)
	go func() {
		resp, err := rt.RoundTrip(get(t, srv.URL+"/slow"))
		if err != nil {
			slow <- result{err: err}
			return
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		slow <- result{resp.StatusCode, string(body), err}
	}()
	<-arrived

	status, _ := roundTripGet(t, rt, srv.URL+"/misdirected")
	assert.Equal(t, http.StatusOK, status)
	addrs, _ := m.attempts()
	require.Len(t, addrs, 2)
	assert.NotEqual(t, addrs[0], addrs[1], "the retry's connection")

	close(release)
	r := <-slow
	require.NoError(t, r.err)
	assert.Equal(t, http.StatusOK, r.status)
	assert.Equal(t, "slow", r.body)
	assert.EqualValues(t, 2, srv.conns.Load(), "connections: the shared one, and the retry's")
}

// roundTripGet sends a GET of url through rt and returns its status and
// body, read whole.
func roundTripGet(t *testing.T, rt http.RoundTripper, url string) (int, string) {
	t.Helper()
	resp, err := rt.RoundTrip(get(t, url))
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

// TestMisdirectedWithoutANewConnection: a 421 is returned as it is, after
// one attempt, when the base cannot open a new connection for the retry (it
// is not an *http.Transport, or it brings an HTTP/2 of its own, as
// golang.org/x/net/http2's ConfigureTransport does), or when one attempt
// is allowed.
func TestMisdirectedWithoutANewConnection(t *testing.T) {
	h2OfItsOwn := map[string]func(string, *tls.Conn) http.RoundTripper{
		"h2": func(string, *tls.Conn) http.RoundTripper { panic("not over TLS") },
	}
	for _, tc := range []struct {
		name    string
		wrapped bool // the base wraps the *http.Transport
		h2      map[string]func(string, *tls.Conn) http.RoundTripper
		opts    []Option
		reason  GiveUpReason
	}{
		{"a base that is not an *http.Transport", true, nil, nil, GiveUpMisdirected},
		{"an *http.Transport with an HTTP/2 of its own", false, h2OfItsOwn, nil, GiveUpMisdirected},
		{"one attempt", false, nil, []Option{WithMaxAttempts(1)}, GiveUpAttemptsExhausted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &misdirecting{n: 1}
			srv := httptest.NewServer(m)
			defer srv.Close()
			ht := &http.Transport{TLSNextProto: tc.h2}
			defer ht.CloseIdleConnections()
			var base http.RoundTripper = ht
			if tc.wrapped {
				base = rtFunc(ht.RoundTrip)
			}
			var ev events
			rt := newTestTransport(base, 0, append(ev.options(), tc.opts...)...)
			req, err := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader("order 42"))
			require.NoError(t, err)
			resp, err := rt.RoundTrip(req)
			require.NoError(t, err)
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, http.StatusMisdirectedRequest, resp.StatusCode)
			assert.Equal(t, "misdirected\n", string(body))
			assert.Equal(t, 1, Attempts(resp))
			assert.Zero(t, m.execs.Load())
			ev.mu.Lock()
			defer ev.mu.Unlock()
			assert.Empty(t, ev.delays)
			assert.Equal(t, []GiveUpReason{tc.reason}, ev.reasons)
		})
	}
}

// TestMisdirectedOnlyA421IsNotProcessed: a classifier may give any
// response the Misdirected facet, but only a 421 lets a request that may
// not be sent twice be resent; a GET marked so is retried at once.
func TestMisdirectedOnlyA421IsNotProcessed(t *testing.T) {
	marked := WithClassifier(classify.Func(func(_ *http.Request, resp *http.Response, _ error) classify.Verdict {
		if resp != nil && resp.StatusCode == http.StatusBadGateway {
			return classify.Verdict{Decision: classify.Retry, Misdirected: true}
		}
		return classify.Default().Classify(nil, resp, nil)
	}))
	for _, method := range []string{http.MethodPost, http.MethodGet} {
		t.Run(method, func(t *testing.T) {
			m := &misdirecting{}
			var n atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if n.Add(1) == 1 {
					http.Error(w, "bad gateway", http.StatusBadGateway)
					return
				}
				m.ServeHTTP(w, r)
			}))
			defer srv.Close()
			base := &http.Transport{}
			defer base.CloseIdleConnections()
			var ev events
			rt := newTestTransport(base, 0.5, append(ev.options(), marked, WithBackoff(backoff.Constant(time.Hour)))...)
			req, err := http.NewRequest(method, srv.URL, nil)
			require.NoError(t, err)
			resp, err := rt.RoundTrip(req)
			require.NoError(t, err)
			resp.Body.Close()
			ev.mu.Lock()
			defer ev.mu.Unlock()
			if method == http.MethodPost {
				assert.Equal(t, http.StatusBadGateway, resp.StatusCode)
				assert.Equal(t, []GiveUpReason{GiveUpNotResendable}, ev.reasons)
				return
			}
			assert.Equal(t, http.StatusOK, resp.StatusCode)
			assert.Equal(t, []time.Duration{0}, ev.delays)
		})
	}
}

// TestMisdirectedWithoutABody: a 421 without a body puts its HTTP/1
// connection back in the pool before the Transport sees it; through a base
// of the caller's that no base.Dialer dials for, which the Transport cannot
// retire, the retry still goes on a new connection.
func TestMisdirectedWithoutABody(t *testing.T) {
	var conns atomic.Int32
	var mu sync.Mutex
	var addrs []string
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		addrs = append(addrs, r.RemoteAddr)
		first := len(addrs) == 1
		mu.Unlock()
		if first {
			w.WriteHeader(http.StatusMisdirectedRequest)
			return
		}
		_, _ = io.WriteString(w, "ok")
	}))
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	base := &http.Transport{}
	defer base.CloseIdleConnections()

	status, body := roundTripGet(t, newTestTransport(base, 0), srv.URL)
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, "ok", body)
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, addrs, 2)
	assert.NotEqual(t, addrs[0], addrs[1], "the retry's connection")
	assert.EqualValues(t, 2, conns.Load(), "connections")
}

// TestMisdirectedGiveUpLoggedAtInfo: a 421 that cannot be retried on a new
// connection is an operator's concern, logged at INFO with its reason.
func TestMisdirectedGiveUpLoggedAtInfo(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	base := &script{steps: statuses(http.StatusMisdirectedRequest)}
	resp, err := newTestTransport(base, 0, WithLogger(logger)).RoundTrip(get(t, "http://svc.test/x"))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, 1, base.count())
	assert.Contains(t, buf.String(), "retryhttp: not retrying")
	assert.Contains(t, buf.String(), string(GiveUpMisdirected))
}
