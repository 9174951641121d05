package retryhttp

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp/backoff"
)

// tlsServer is a loopback TLS server that counts the connections it
// accepts and its TLS handshakes, full and resumed.
type tlsServer struct {
	*httptest.Server
	conns, full, resumed atomic.Int32
}

// newTLSServer starts a tlsServer with handler h, speaking HTTP/2 when h2
// is set and HTTP/1.1 otherwise.
func newTLSServer(t *testing.T, h2 bool, h http.Handler) *tlsServer {
	t.Helper()
	s := &tlsServer{Server: httptest.NewUnstartedServer(h)}
	s.EnableHTTP2 = h2
	s.TLS = &tls.Config{VerifyConnection: func(cs tls.ConnectionState) error {
		// Called once a handshake, the resumed ones included.
		if cs.DidResume {
			s.resumed.Add(1)
		} else {
			s.full.Add(1)
		}
		return nil
	}}
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}
	s.StartTLS()
	t.Cleanup(s.Close)
	return s
}

// trust makes tr trust s's certificate, on a clone of tr's TLS config that
// keeps everything else, its session cache included.
func (s *tlsServer) trust(tr *http.Transport) {
	cfg := tr.TLSClientConfig.Clone()
	cfg.RootCAs = x509.NewCertPool()
	cfg.RootCAs.AddCert(s.Certificate())
	tr.TLSClientConfig = cfg
}

// TestDefaultBaseResumesTLS proves that the connections the default base
// opens to a host it has reached before resume their TLS session: a
// request whose first two attempts' connections the server closes (a 503
// with Connection: close) costs the server one full handshake and two
// abbreviated ones. Without the session cache, the same request costs three
// full handshakes.
func TestDefaultBaseResumesTLS(t *testing.T) {
	for _, tc := range []struct {
		name          string
		noCache       bool
		full, resumed int32
	}{
		{"default base", false, 1, 2},
		{"default base without its session cache", true, 3, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var n atomic.Int32
			srv := newTLSServer(t, false, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				if n.Add(1) <= 2 {
					w.Header().Set("Connection", "close")
					http.Error(w, "unavailable", http.StatusServiceUnavailable)
					return
				}
				_, _ = io.WriteString(w, "ok")
			}))
			b := defaultBase()
			require.NotNil(t, b.TLSClientConfig)
			cache := b.TLSClientConfig.ClientSessionCache
			require.NotNil(t, cache, "the default base's session cache")
			srv.trust(b)
			require.Same(t, cache, b.TLSClientConfig.ClientSessionCache)
			if tc.noCache {
				b.TLSClientConfig.ClientSessionCache = nil
			}
			defer b.CloseIdleConnections()
			rt := newTestTransport(b, 0, WithBackoff(backoff.Constant(0)))

			resp, err := rt.RoundTrip(get(t, srv.URL))
			require.NoError(t, err)
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, "ok", string(body))
			assert.Equal(t, 3, Attempts(resp))
			assert.EqualValues(t, 3, srv.conns.Load(), "connections")
			assert.Equal(t, tc.full, srv.full.Load(), "full handshakes")
			assert.Equal(t, tc.resumed, srv.resumed.Load(), "resumed handshakes")
			t.Logf("%s: %d connections, %d full handshakes, %d resumed", tc.name, srv.conns.Load(), srv.full.Load(), srv.resumed.Load())
		})
	}
}

// TestWithBaseLeavesTheTLSConfig: a base of the caller's is used as it is,
// without a session cache of the Transport's.
func TestWithBaseLeavesTheTLSConfig(t *testing.T) {
	mine := &http.Transport{}
	rt := New(WithBase(mine))
	assert.Same(t, mine, rt.base)
	assert.Nil(t, mine.TLSClientConfig)
}
