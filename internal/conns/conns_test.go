package conns

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestResumeTLS: a transport without a TLS config gets one with a session
// cache; one with a config gets a clone of it with a cache, the original
// left as it was; one whose config has a cache keeps it.
func TestResumeTLS(t *testing.T) {
	var bare http.Transport
	ResumeTLS(&bare)
	require.NotNil(t, bare.TLSClientConfig)
	assert.NotNil(t, bare.TLSClientConfig.ClientSessionCache)

	roots := x509.NewCertPool()
	shared := &tls.Config{RootCAs: roots, ServerName: "svc.test"}
	withConfig := http.Transport{TLSClientConfig: shared}
	ResumeTLS(&withConfig)
	assert.NotSame(t, shared, withConfig.TLSClientConfig, "a config of the transport's is cloned")
	assert.Nil(t, shared.ClientSessionCache, "the original config is left as it was")
	assert.NotNil(t, withConfig.TLSClientConfig.ClientSessionCache)
	assert.Same(t, roots, withConfig.TLSClientConfig.RootCAs)
	assert.Equal(t, "svc.test", withConfig.TLSClientConfig.ServerName)

	cache := tls.NewLRUClientSessionCache(8)
	own := &tls.Config{ClientSessionCache: cache}
	withCache := http.Transport{TLSClientConfig: own}
	ResumeTLS(&withCache)
	assert.Same(t, own, withCache.TLSClientConfig)
	assert.Same(t, cache, withCache.TLSClientConfig.ClientSessionCache)
}

func TestFresh(t *testing.T) {
	assert.Nil(t, Fresh(http.NewFileTransport(http.Dir("."))), "not an *http.Transport")
	h2 := &http.Transport{TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{"h2": nil}}
	h2.TLSNextProto["h2"] = func(string, *tls.Conn) http.RoundTripper { return nil }
	assert.Nil(t, Fresh(h2), "an HTTP/2 of its own shares its pool")

	base := DefaultBase()
	c := Fresh(base)
	require.NotNil(t, c)
	assert.True(t, c.DisableKeepAlives)
	assert.False(t, base.DisableKeepAlives, "the base is left as it is")
	assert.Same(t, base.TLSClientConfig.ClientSessionCache, c.TLSClientConfig.ClientSessionCache, "the new connection resumes TLS")
}

func TestCheckResult(t *testing.T) {
	resp, err := CheckResult(nil, nil)
	assert.Nil(t, resp)
	assert.Error(t, err)
	resp, err = CheckResult(&http.Response{}, nil)
	require.NoError(t, err)
	assert.Equal(t, http.NoBody, resp.Body)
}

type wrapper struct{ http.RoundTripper }

func (w wrapper) Unwrap() http.RoundTripper { return w.RoundTripper }

type loop struct{ http.RoundTripper }

func (l *loop) Unwrap() http.RoundTripper { return l }

func TestUnder(t *testing.T) {
	isTransport := func(rt http.RoundTripper) bool { _, ok := rt.(*http.Transport); return ok }
	assert.True(t, Under(&http.Transport{}, isTransport))
	assert.True(t, Under(wrapper{wrapper{&http.Transport{}}}, isTransport))
	assert.False(t, Under(wrapper{http.NewFileTransport(http.Dir("."))}, isTransport))
	assert.False(t, Under(&loop{}, isTransport), "wrappers that unwrap to each other end")
	var deep http.RoundTripper = &http.Transport{}
	for range 100 {
		deep = wrapper{deep}
	}
	assert.True(t, Under(deep, isTransport), "100 wrappers deep")
	assert.False(t, Under(endless{}, isTransport), "wrappers by value without end")
}

// endless unwraps to another of itself, without end.
type endless struct{ n int }

func (e endless) RoundTrip(*http.Request) (*http.Response, error) { return nil, nil }
func (e endless) Unwrap() http.RoundTripper                       { return endless{e.n + 1} }
