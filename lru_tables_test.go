package retryhttp

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/retryhttp/retryhttp/budget"
	"github.com/retryhttp/retryhttp/hedge"
	"github.com/retryhttp/retryhttp/internal/hedging"
	"github.com/retryhttp/retryhttp/internal/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp/internal/latency"
)

// manyHosts returns a base transport whose dialer sends every host named
// *.test to addr, over real loopback connections, so that a test can call
// thousands of distinct hosts; a host named dead*.test is sent to a port
// that refuses connections instead.
func manyHosts(t *testing.T, addr string) *http.Transport {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := l.Addr().String()
	require.NoError(t, l.Close())
	var d net.Dialer
	return &http.Transport{
		DisableKeepAlives: true, // thousands of hosts, no idle connection each
		DialContext: func(ctx context.Context, network, host string) (net.Conn, error) {
			if strings.HasPrefix(host, "dead") {
				return d.DialContext(ctx, network, closed)
			}
			return d.DialContext(ctx, network, addr)
		},
	}
}

func TestHostMetAfterManyOthersIsHedged(t *testing.T) {
	release := make(chan struct{})
	var slowCalls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.Host, "slow") && slowCalls.Add(1) == 1 {
			select { // the first attempt stalls; the hedge answers
			case <-release:
			case <-r.Context().Done():
			}
		}
		_, _ = io.WriteString(w, "ok")
	}))
	defer srv.Close()
	defer close(release)

	tr := New(WithBase(manyHosts(t, srv.Listener.Addr().String())), WithHedging(hedge.Delay(100*time.Millisecond)))
	defer tr.CloseIdleConnections()
	for i := range 1100 {
		resp, err := tr.RoundTrip(get(t, fmt.Sprintf("http://h%d.test/", i)))
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	assert.Equal(t, hedging.Hosts, tr.hedge.Table().Len(), "hosts tracked")

	// Without a hedge, the request would wait for this deadline.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://slow.test/", nil)
	require.NoError(t, err)
	resp, err := tr.RoundTrip(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, 2, Attempts(resp), "the new host was hedged")
	assert.Equal(t, int64(2), slowCalls.Load())
}

func TestHostInUseKeepsItsBudgetAmongDeadHosts(t *testing.T) {
	// The host in use fails every other attempt; the others refuse every
	// connection and are never called again.
	var flaky atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if flaky.Add(1)%2 == 1 {
			http.Error(w, "flaky", http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "ok")
	}))
	defer srv.Close()
	tr := New(append([]Option{WithBase(manyHosts(t, srv.Listener.Addr().String()))}, fastRetries...)...)
	defer tr.CloseIdleConnections()

	dead := 0
	callDead := func() {
		_, err := tr.RoundTrip(get(t, fmt.Sprintf("http://dead%d.test/", dead)))
		require.Error(t, err)
		dead++
	}
	for range 1100 {
		callDead()
	}
	ok := 0
	for range 50 {
		resp, err := tr.RoundTrip(get(t, "http://flaky.test/"))
		require.NoError(t, err)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			ok++
		}
		callDead()
		callDead()
	}
	assert.Equal(t, 50, ok, "requests to the host in use that succeeded")
	assert.LessOrEqual(t, tr.Budget().(*budget.PerHost).Hosts(), 1024)
}

// BenchmarkLatencyTableNewHosts measures a request to a host the full
// latency table has not met, which takes the place of the least recently
// used: one pass over the table and a copy of it.
func BenchmarkLatencyTableNewHosts(b *testing.B) {
	table := latency.NewTable(hedging.Hosts)
	keys := make([]wire.HostKey, 4*hedging.Hosts)
	for i := range keys {
		keys[i] = wire.HostKey{Scheme: "https", Host: fmt.Sprintf("h%d.example", i)}
		table.Host(keys[i])
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		table.Host(keys[i%len(keys)])
	}
}
