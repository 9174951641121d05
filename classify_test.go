package retryhttp

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/retryhttp/retryhttp/classify"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// connectProxy is an HTTP proxy on loopback that answers its first refuse
// CONNECTs with status (and header), and tunnels the others.
type connectProxy struct {
	*httptest.Server
	connects atomic.Int64
	tunnels  sync.WaitGroup
}

func newConnectProxy(t *testing.T, refuse int64, status int, header http.Header) *connectProxy {
	t.Helper()
	p := &connectProxy{}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodConnect {
			http.Error(w, "CONNECT only", http.StatusMethodNotAllowed)
			return
		}
		if p.connects.Add(1) <= refuse {
			for k, v := range header {
				w.Header()[k] = v
			}
			w.WriteHeader(status)
			return
		}
		dst, err := net.Dial("tcp", r.Host)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		w.WriteHeader(http.StatusOK)
		conn, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			dst.Close()
			return
		}
		p.tunnels.Go(func() {
			_, _ = io.Copy(dst, buf)
			dst.Close()
		})
		p.tunnels.Go(func() {
			_, _ = io.Copy(conn, dst)
			conn.Close()
		})
	}))
	t.Cleanup(func() {
		p.CloseClientConnections()
		p.Close()
		p.tunnels.Wait()
	})
	return p
}

// countingTLSServer is an HTTPS destination that counts the requests its
// handler runs.
func countingTLSServer(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var calls atomic.Int64
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		calls.Add(1)
		_, _ = io.WriteString(w, "ok")
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

// proxiedTransports returns, for dst through proxy, a Transport over its
// default base and one over WithBase, each with opts.
func proxiedTransports(t *testing.T, dst *httptest.Server, proxy string, opts ...Option) map[string]*Transport {
	t.Helper()
	u, err := url.Parse(proxy)
	require.NoError(t, err)
	tlsConfig := dst.Client().Transport.(*http.Transport).TLSClientConfig

	def := New(opts...)
	ht := def.base.(*http.Transport)
	ht.Proxy, ht.TLSClientConfig = http.ProxyURL(u), tlsConfig

	base := &http.Transport{Proxy: http.ProxyURL(u), TLSClientConfig: tlsConfig}
	withBase := New(append([]Option{WithBase(base)}, opts...)...)
	assert.Nil(t, base.OnProxyConnectResponse, "the caller's transport is not modified")
	t.Cleanup(func() {
		def.CloseIdleConnections()
		withBase.CloseIdleConnections()
	})
	return map[string]*Transport{"default base": def, "WithBase": withBase}
}

func TestProxyRefusalIsRetried(t *testing.T) {
	for _, status := range []int{http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusTooManyRequests} {
		for _, method := range []string{http.MethodGet, http.MethodPost} {
			dst, calls := countingTLSServer(t)
			proxy := newConnectProxy(t, 1, status, nil)
			for name, tr := range proxiedTransports(t, dst, proxy.URL, fastRetries...) {
				t.Run(strconv.Itoa(status)+" "+method+" "+name, func(t *testing.T) {
					calls.Store(0)
					proxy.connects.Store(0)
					req, err := http.NewRequest(method, dst.URL, http.NoBody)
					require.NoError(t, err)
					resp, err := tr.RoundTrip(req)
					require.NoError(t, err)
					resp.Body.Close()
					assert.Equal(t, http.StatusOK, resp.StatusCode)
					assert.Equal(t, 2, Attempts(resp))
					assert.Equal(t, int64(2), proxy.connects.Load(), "CONNECTs")
					assert.Equal(t, int64(1), calls.Load(), "executions at the destination")
				})
			}
		}
	}
}

func TestProxyRefusalIsFinal(t *testing.T) {
	tests := []struct {
		name   string
		status int
		header http.Header
	}{
		{"credentials wanted", http.StatusProxyAuthRequired, http.Header{"Proxy-Authenticate": {`Basic realm="egress"`}}},
		{"Retry-After beyond the limit", http.StatusServiceUnavailable, http.Header{"Retry-After": {"120"}}},
	}
	for _, tt := range tests {
		dst, calls := countingTLSServer(t)
		proxy := newConnectProxy(t, 1, tt.status, tt.header)
		opts := append([]Option{WithRetryAfterLimit(time.Second)}, fastRetries...)
		for name, tr := range proxiedTransports(t, dst, proxy.URL, opts...) {
			t.Run(tt.name+" "+name, func(t *testing.T) {
				proxy.connects.Store(0)
				_, err := tr.RoundTrip(get(t, dst.URL))
				var pe *classify.ProxyConnectError
				require.ErrorAs(t, err, &pe)
				assert.Equal(t, tt.status, pe.StatusCode)
				assert.Equal(t, strconv.Itoa(tt.status)+" "+http.StatusText(tt.status), pe.Status)
				var rerr *Error
				require.ErrorAs(t, err, &rerr)
				assert.Equal(t, 1, rerr.Attempts)
				assert.Equal(t, int64(1), proxy.connects.Load(), "CONNECTs")
				assert.Zero(t, calls.Load(), "executions at the destination")
			})
		}
	}
}

func TestProxyRefusalKeepsTheBaseHook(t *testing.T) {
	dst, _ := countingTLSServer(t)
	proxy := newConnectProxy(t, 1, http.StatusServiceUnavailable, nil)
	u, err := url.Parse(proxy.URL)
	require.NoError(t, err)
	var seen atomic.Int64
	base := &http.Transport{
		Proxy:           http.ProxyURL(u),
		TLSClientConfig: dst.Client().Transport.(*http.Transport).TLSClientConfig,
		OnProxyConnectResponse: func(_ context.Context, _ *url.URL, _ *http.Request, resp *http.Response) error {
			seen.Add(1)
			return nil
		},
	}
	tr := New(append([]Option{WithBase(base)}, fastRetries...)...)
	defer tr.CloseIdleConnections()
	resp, err := tr.RoundTrip(get(t, dst.URL))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, int64(2), seen.Load(), "the base's own hook saw both answers")
}

func TestProxyRefusalOfAnotherBaseIsFinal(t *testing.T) {
	dst, calls := countingTLSServer(t)
	proxy := newConnectProxy(t, 1, http.StatusServiceUnavailable, nil)
	u, err := url.Parse(proxy.URL)
	require.NoError(t, err)
	inner := &http.Transport{Proxy: http.ProxyURL(u), TLSClientConfig: dst.Client().Transport.(*http.Transport).TLSClientConfig}
	defer inner.CloseIdleConnections()
	// A base that is not an *http.Transport gets net/http's error as it is:
	// it has no type, and is final.
	tr := New(append([]Option{WithBase(rtFunc(inner.RoundTrip))}, fastRetries...)...)
	_, err = tr.RoundTrip(get(t, dst.URL))
	require.Error(t, err)
	var rerr *Error
	require.ErrorAs(t, err, &rerr)
	assert.Equal(t, 1, rerr.Attempts)
	assert.Equal(t, int64(1), proxy.connects.Load())
	assert.Zero(t, calls.Load())
}
