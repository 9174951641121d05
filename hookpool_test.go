package retryhttp

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/retryhttp/retryhttp/base"
	"github.com/stretchr/testify/require"
)

// earlyBase is a wrapper that unwraps to an *http.Transport but answers
// each attempt with a 503 of its own as soon as the inner round trip it
// started asks for a connection, leaving that round trip to go on after
// its RoundTrip returned, as a wrapper with a timeout of its own does. Once
// the inner round trip ends, it checks that the connection the attempt's
// trace recorded is the one that carried it.
type earlyBase struct {
	inner   *http.Transport
	wg      sync.WaitGroup
	checked atomic.Int32
	failed  atomic.Int32 // inner round trips that failed: cancelled with their attempt, as may be
	wrong   atomic.Int32 // attempts whose trace recorded another request's connection, or none
}

func (b *earlyBase) Unwrap() http.RoundTripper { return b.inner }

func (b *earlyBase) RoundTrip(r *http.Request) (*http.Response, error) {
	asked := make(chan struct{})
	var once sync.Once
	r = r.WithContext(httptrace.WithClientTrace(r.Context(), &httptrace.ClientTrace{
		GetConn: func(string) { once.Do(func() { close(asked) }) },
	}))
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		resp, err := b.inner.RoundTrip(r)
		if err != nil {
			b.failed.Add(1)
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		b.checked.Add(1)
		if base.Peer(r.Context()) != netip.MustParseAddrPort(r.URL.Host) {
			b.wrong.Add(1)
		}
	}()
	<-asked
	return &http.Response{StatusCode: http.StatusServiceUnavailable, Header: http.Header{},
		Body: http.NoBody, Request: r}, nil
}

// TestPooledHooksNeverReachAnotherAttempt checks that a base that returns
// before the round trip it started inside has called the attempt's trace
// hooks never sees them handed to another attempt: each of 8 callers sends
// to a server of its own, and every inner round trip's connection must be
// the one its own attempt's trace recorded. Pooled hooks handed back as
// the wrapper returned fired on other attempts' traces (and -race reported
// Trace.Begin against the hook reading its trace).
func TestPooledHooksNeverReachAnotherAttempt(t *testing.T) {
	const callers, calls = 8, 30
	eb := &earlyBase{inner: defaultBase()}
	defer eb.inner.CloseIdleConnections()
	var retries atomic.Int32
	tr := New(WithBase(eb), WithoutBudget(), WithMaxAttempts(3),
		WithBackoff(func(int, time.Duration, float64) time.Duration { return 0 }),
		WithOnRetry(func(RetryEvent) { retries.Add(1) }))

	var wg sync.WaitGroup
	for range callers {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
		defer srv.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range calls {
				req, err := http.NewRequest(http.MethodGet, srv.URL, nil)
				if err != nil {
					panic(err)
				}
				resp, err := tr.RoundTrip(req)
				if err == nil {
					resp.Body.Close()
				}
			}
		}()
	}
	wg.Wait()
	eb.wg.Wait()
	require.Equal(t, int32(callers*calls*3), eb.checked.Load()+eb.failed.Load(), "inner round trips")
	require.Positive(t, eb.checked.Load(), "inner round trips that completed, their traces checked")
	require.Zero(t, eb.wrong.Load(), "attempts whose trace recorded a connection not their own")
	require.Equal(t, int32(callers*calls*2), retries.Load(), "retries reported")
}
