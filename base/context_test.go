package base_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/backoff"
	"github.com/retryhttp/retryhttp/base"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWithoutATransport(t *testing.T) {
	assert.Equal(t, 1, base.Attempt(context.Background()))
	assert.False(t, base.Peer(context.Background()).IsValid())
}

// recorder is a base over an *http.Transport, which it unwraps to so that
// the Transport traces the attempts, that records what each attempt's
// context says.
type recorder struct {
	next    *http.Transport
	numbers []int
	peers   []netip.AddrPort
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.next.RoundTrip(req)
	r.numbers = append(r.numbers, base.Attempt(req.Context()))
	r.peers = append(r.peers, base.Peer(req.Context()))
	return resp, err
}

func (r *recorder) Unwrap() http.RoundTripper { return r.next }

// TestAttemptAndPeer reads, in a base under a Transport, each attempt's
// number and the address of the connection that carried it: every
// attempt's when the Transport has a hook, and otherwise the retry's (the
// first attempt, to a host that had not failed, is not traced).
func TestAttemptAndPeer(t *testing.T) {
	for _, hooked := range []bool{true, false} {
		calls := 0
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			calls++
			if calls == 1 {
				w.WriteHeader(http.StatusServiceUnavailable)
			}
		}))
		rec := &recorder{next: &http.Transport{DialContext: base.NewDialer().DialContext}}
		opts := []retryhttp.Option{retryhttp.WithBase(rec), retryhttp.WithBackoff(backoff.Constant(0))}
		if hooked {
			opts = append(opts, retryhttp.WithOnRetry(func(retryhttp.RetryEvent) {}))
		}
		tr := retryhttp.New(opts...)
		resp, err := (&http.Client{Transport: tr}).Get(srv.URL)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, []int{1, 2}, rec.numbers)
		peer := netip.MustParseAddrPort(srv.Listener.Addr().String())
		first := peer
		if !hooked {
			first = netip.AddrPort{}
		}
		assert.Equal(t, []netip.AddrPort{first, peer}, rec.peers, "hooked: %v", hooked)
		rec.next.CloseIdleConnections()
		srv.Close()
	}
}
