package guard

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTheConnectionTellsTheLoop: over net/http's Transport and real TLS
// loopback servers, the loop a guard reads from the first connection is
// the one it reads from the stack: HTTP/2 where ALPN chose h2, HTTP/1
// where it did not, and over a connection without TLS.
func TestTheConnectionTellsTheLoop(t *testing.T) {
	for _, tt := range []struct {
		name      string
		tls, h2   bool
		wantHTTP2 bool
	}{
		{"HTTP/2 over TLS", true, true, true},
		{"HTTP/1 over TLS", true, false, false},
		{"HTTP/1 without TLS", false, false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
			srv.EnableHTTP2 = tt.h2
			if tt.tls {
				srv.StartTLS()
			} else {
				srv.Start()
			}
			defer srv.Close()
			tr := srv.Client().Transport.(*http.Transport)
			for _, base := range []Base{BaseOf(tr, true), {}} { // read from the connection, then from the stack
				g, ctx := Start(context.Background(), base)
				req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, strings.NewReader("x"))
				require.NoError(t, err)
				resp, err := tr.RoundTrip(req)
				g.Returned()
				require.NoError(t, err)
				resp.Body.Close()
				g.End()
				assert.Equal(t, tt.wantHTTP2, g.is(guardHTTP2), "HTTP/2 loop, %+v", base)
				assert.Equal(t, !tt.wantHTTP2, g.HTTP1(), "HTTP/1 loop, %+v", base)
				assert.EqualValues(t, 1, g.Conns())
			}
		})
	}
}
