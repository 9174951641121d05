package scenario

import (
	"crypto/tls"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHandshakesTellResumedFromFull checks the server's counts: of two
// connections in turn through a client with a TLS session cache, the
// second resumes; through a client without one, both are full.
func TestHandshakesTellResumedFromFull(t *testing.T) {
	for _, w := range []wire{tlsHTTP1, tlsHTTP2} {
		for _, cache := range []bool{false, true} {
			name := w.String() + map[bool]string{false: "", true: ", session cache"}[cache]
			t.Run(name, func(t *testing.T) {
				srv := newServer(OK, w)
				cfg := &tls.Config{RootCAs: srv.RootCAs()}
				if cache {
					cfg.ClientSessionCache = tls.NewLRUClientSessionCache(0)
				}
				// Without keep-alives, each request dials a connection
				// of its own.
				tr := &http.Transport{TLSClientConfig: cfg, ForceAttemptHTTP2: true, DisableKeepAlives: true}
				for range 2 {
					resp, err := (&http.Client{Transport: tr}).Get(srv.URL)
					require.NoError(t, err)
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					assert.Equal(t, map[wire]int{tlsHTTP1: 1, tlsHTTP2: 2}[w], resp.ProtoMajor)
				}
				srv.Close()
				want := Handshakes{Full: 2}
				if cache {
					want = Handshakes{Full: 1, Resumed: 1}
				}
				assert.Equal(t, want, srv.Handshakes())
				assert.Equal(t, int64(2), srv.Conns())
			})
		}
	}
}

// TestHandshakesCountOnlyCompletedOnes checks that a connection that
// completes its handshake and closes without a request counts, and one
// whose client rejects the certificate does not.
func TestHandshakesCountOnlyCompletedOnes(t *testing.T) {
	srv := newServer(OK, tlsHTTP1)
	addr := strings.TrimPrefix(srv.URL, "https://")
	// In TLS 1.2 the server's Finished comes last: once the client has it,
	// the server's handshake is complete, whenever Close comes.
	c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: srv.RootCAs(), MaxVersion: tls.VersionTLS12})
	require.NoError(t, err)
	require.NoError(t, c.Close())
	_, err = tls.Dial("tcp", addr, &tls.Config{}) // trusts the system's roots alone
	require.Error(t, err)
	srv.Close()
	assert.Equal(t, Handshakes{Full: 1}, srv.Handshakes())
	assert.Equal(t, int64(2), srv.Conns())
}
