package retryhttp

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp/backoff"

	"github.com/retryhttp/retryhttp/internal/evidence"
)

// pinnedServer is a loopback service behind a balancer that pins each
// connection to an instance: while it is down every answer is a 503, and
// once it heals only the connections opened since are served; those
// opened before stay pinned to a dead instance.
type pinnedServer struct {
	*httptest.Server
	healed atomic.Bool
	conns  atomic.Int32
}

type pinnedConnKey struct{}

func newPinnedServer(t *testing.T) *pinnedServer {
	s := &pinnedServer{}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !r.Context().Value(pinnedConnKey{}).(bool) {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "ok")
	}))
	s.Config.ConnContext = func(ctx context.Context, _ net.Conn) context.Context {
		s.conns.Add(1)
		return context.WithValue(ctx, pinnedConnKey{}, s.healed.Load())
	}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

// getStatus sends a GET of url through tr and returns its status.
func getStatus(t *testing.T, tr http.RoundTripper, url string) int {
	t.Helper()
	resp, err := tr.RoundTrip(get(t, url))
	require.NoError(t, err)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestEjectionIsBoundedAfterAnyOutage proves that a client pinned to a
// dead instance tries a new connection within evidence.ProbeGap failures of the
// host healing, however long the outage was: after 300 sequential GETs
// that all failed (no budget, no delay: 900 attempts), the service heals
// while the client's connection stays pinned to a dead instance, and at
// most 20 requests fail before one is served (16 failures are 6 requests
// of 3 attempts). The gap doubled without limit before: 205 requests
// failed.
func TestEjectionIsBoundedAfterAnyOutage(t *testing.T) {
	srv := newPinnedServer(t)
	tr := New(WithoutBudget(), WithBackoff(backoff.Constant(0)))
	defer tr.CloseIdleConnections()
	for range 300 {
		require.Equal(t, http.StatusServiceUnavailable, getStatus(t, tr, srv.URL))
	}
	during := srv.conns.Load()
	srv.healed.Store(true)
	failed := 0
	for getStatus(t, tr, srv.URL) != http.StatusOK {
		failed++
		require.Less(t, failed, 300, "no request was served after the heal")
	}
	t.Logf("connections during the outage: %d; requests failed after the heal: %d", during, failed)
	assert.LessOrEqual(t, failed, 20, "requests failed after the heal")
	// The outage's cost stays bounded too: one connection per evidence.ProbeGap
	// failures once the host was down.
	assert.LessOrEqual(t, int(during), 1+evidence.HostLeaveLimit+900/evidence.ProbeGap, "connections during the outage")
}

// TestOutageOverManyHostsCostsAsOverFew proves that the evidence table
// remembers as many hosts as the other per-host tables (1024): an outage
// requested round robin over 80 hosts costs no more than three times the
// new connections a request of one over 8 hosts (plus 0.1), where a table
// of 64 hosts forgot each host before its next request and every retry
// dialled (1.10 a request, against 0.07).
func TestOutageOverManyHostsCostsAsOverFew(t *testing.T) {
	perRequest := func(hosts, requests int) float64 {
		var conns atomic.Int32
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "down", http.StatusServiceUnavailable)
		}))
		srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				conns.Add(1)
			}
		}
		srv.Start()
		defer srv.Close()
		// Every host name reaches the one server, each with a pool of its own.
		b := defaultBase()
		addr := srv.Listener.Addr().String()
		var d net.Dialer
		b.DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
			return d.DialContext(ctx, network, addr)
		}
		tr := New(WithBase(b), WithoutBudget(), WithBackoff(backoff.Constant(0)))
		defer tr.CloseIdleConnections()
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Go(func() {
				for i := w; i < requests; i += 4 {
					getStatus(t, tr, "http://h"+strconv.Itoa(i%hosts)+".test/")
				}
			})
		}
		wg.Wait()
		return float64(conns.Load()) / float64(requests)
	}
	few := perRequest(8, 1600)
	many := perRequest(80, 1600)
	t.Logf("new connections a request: %.3f over 8 hosts, %.3f over 80", few, many)
	assert.LessOrEqual(t, many, 3*few+0.1, "over 80 hosts")
}

// TestHedgingLeavesConnectionsOnEvidence proves that the attempts of the
// hedged path are judged on evidence as the others are: with hedging on,
// 2,000 GETs, 16 at a time, to a server that answers every tenth request
// 503 cost, beyond one connection a hedge, no more than twice the
// connections the AWS retryer opens in the bench's transient scenario
// (16-21: it never leaves one). Untraced, every retried 5xx on the hedged
// path left its connection: 212-221.
func TestHedgingLeavesConnectionsOnEvidence(t *testing.T) {
	var calls, conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if calls.Add(1)%10 == 0 {
			http.Error(w, "unavailable", http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "ok")
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	var hedges atomic.Int32
	tr := New(WithHedging(), WithBackoff(backoff.Constant(0)), WithOnHedge(func(HedgeEvent) { hedges.Add(1) }))
	defer tr.CloseIdleConnections()
	var wg sync.WaitGroup
	var failed atomic.Int32
	for w := range 16 {
		wg.Go(func() {
			for i := w; i < 2000; i += 16 {
				if getStatus(t, tr, srv.URL) != http.StatusOK {
					failed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	t.Logf("connections: %d; hedges: %d; requests that failed: %d", conns.Load(), hedges.Load(), failed.Load())
	// A hedge over HTTP/1 needs a connection of its own, and the loser
	// cancelled in flight closes its: those are counted apart.
	assert.LessOrEqual(t, conns.Load()-hedges.Load(), int32(2*21), "connections beyond one a hedge")
}
