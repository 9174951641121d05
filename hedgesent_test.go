package retryhttp

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	retrybase "github.com/retryhttp/retryhttp/base"
	"github.com/retryhttp/retryhttp/hedge"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHedgesCancelledAsTheyDialAreNotCounted: a server that answers in 10
// ms, hedges 3 ms apart whose dials do not end before the first attempt
// has won. The hedges never leave: Attempts says 1 for each GET, as many
// as the server received. Hedges cancelled as they dialled were counted
// as sent, 3 attempts a GET.
func TestHedgesCancelledAsTheyDialAreNotCounted(t *testing.T) {
	var received atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		received.Add(1)
		time.Sleep(10 * time.Millisecond) // the server's answer time
	}))
	defer srv.Close()
	base := defaultBase()
	// A connection a request: none is handed, as it goes idle, to a hedge
	// waiting for one.
	base.DisableKeepAlives = true
	dial := base.DialContext
	var hedgeDials atomic.Int32
	stuck := make(chan struct{}) // a hedge's dial, until the test ends
	base.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		// The dial's context has its request's values: a hedge's says
		// which attempt it is.
		if retrybase.Attempt(ctx) > 1 {
			hedgeDials.Add(1)
			<-stuck
			return nil, context.Canceled
		}
		return dial(ctx, network, addr)
	}
	defer base.CloseIdleConnections()
	defer close(stuck)
	tr := New(WithBase(base), WithHedging(hedge.Delay(3*time.Millisecond), hedge.MaxFraction(1)), WithoutBudget())
	for range 30 {
		before := received.Load()
		resp, err := tr.RoundTrip(get(t, srv.URL))
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, 1, Attempts(resp), "a GET whose hedges never left")
		assert.Equal(t, int32(1), received.Load()-before)
	}
	assert.Greater(t, int(hedgeDials.Load()), 30, "hedges dialled")
}
