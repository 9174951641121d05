package retryhttp

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp/backoff"
)

// stallingListener holds the handshake of one accepted connection, the
// stall-th, until release is closed: the server reads nothing from it, as
// a loaded server is slow to answer a ClientHello.
type stallingListener struct {
	net.Listener
	stall   int32
	n       atomic.Int32
	release chan struct{}
}

func (l *stallingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil || l.n.Add(1) != l.stall {
		return c, err
	}
	return &stalledConn{Conn: c, release: l.release}, nil
}

type stalledConn struct {
	net.Conn
	release chan struct{}
}

func (c *stalledConn) Read(p []byte) (int, error) {
	<-c.release
	return c.Conn.Read(p)
}

type connIndexKey struct{}

// TestTurnNeverWaitsLongerThanADial proves that attempts taking turns while
// a host's HTTP/2 connection is replaced never wait for another attempt's
// connection longer than a dial of their own would take: 20 concurrent
// GETs fail on a connection to a bad instance, and the retry that takes
// the first turn dials a connection whose handshake never ends. The others
// wait the host's patience at most, then one of them dials, and they share
// its connection: the median request is served well within 1 s (plain
// net/http would dial one connection each), at the cost of a connection
// or two more than the stalled one.
func TestTurnNeverWaitsLongerThanADial(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Context().Value(connIndexKey{}).(int32) == 1 {
			http.Error(w, "bad instance", http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "ok")
	}))
	ln := &stallingListener{Listener: srv.Listener, stall: 2, release: release}
	srv.Listener = ln
	var conns atomic.Int32
	srv.Config.ConnContext = func(ctx context.Context, _ net.Conn) context.Context {
		return context.WithValue(ctx, connIndexKey{}, conns.Add(1))
	}
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	base := srv.Client().Transport.(*http.Transport)
	defer base.CloseIdleConnections()
	tr := New(WithBase(base), WithBackoff(backoff.Constant(0)), WithoutBudget(), WithMaxAttempts(3),
		WithOnRetry(func(RetryEvent) {})) // the hook traces every attempt

	// The first connection, to the bad instance, carries every first attempt.
	warm, err := base.RoundTrip(get(t, srv.URL))
	require.NoError(t, err)
	io.Copy(io.Discard, warm.Body)
	warm.Body.Close()

	const n = 20
	took := make(chan time.Duration, n)
	var wg sync.WaitGroup
	start := time.Now()
	for range n {
		wg.Go(func() {
			resp, err := tr.RoundTrip(get(t, srv.URL))
			if err != nil {
				t.Error(err)
				took <- time.Hour
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			assert.Equal(t, http.StatusOK, resp.StatusCode)
			took <- time.Since(start)
		})
	}
	// Once all but one are served (or 5 s passed, for a Transport whose
	// attempts all wait behind the stalled handshake), the handshake ends.
	bound := time.NewTimer(5 * time.Second)
	defer bound.Stop()
	var times []time.Duration
	for len(times) < n-1 {
		select {
		case d := <-took:
			times = append(times, d)
			continue
		case <-bound.C:
		}
		break
	}
	close(release)
	for len(times) < n {
		times = append(times, <-took)
	}
	wg.Wait()
	slices.Sort(times)
	t.Logf("times to an answer: %v; connections: %d", times, conns.Load())
	assert.Less(t, times[n/2], time.Second, "the median request")
	// The connections depend on how long handshakes take on a loaded
	// machine (a turn is given again once a patience): logged, not held.
}
