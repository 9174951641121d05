package retryhttp

// The base a Transport sends attempts through: by default one of its own,
// with TLS sessions resumed, and a clone of it that dials a connection per
// request for a retry that must not go down the one that failed.

import (
	"crypto/tls"
	"net/http"

	"github.com/hashicorp/go-cleanhttp"
	"github.com/retryhttp/retryhttp/base"
)

// newConns returns the transport of a retry that must not go down the
// connection that failed, a misdirected request's (classify.Verdict's
// Misdirected): a clone of the base with keep-alives off, so that each of
// its requests dials a connection of its own, closed after its response,
// over HTTP/2 too, where the base's connection to the host carries every
// other request and cannot be left without cutting theirs. It is made on
// first use, and shares the base's dialer (a base.Dialer dials the
// addresses that failed last) and TLS config (its session cache: the new
// connection resumes TLS). It returns nil when the base is not an
// *http.Transport, or when its HTTP/2 is its own (golang.org/x/net/http2's
// ConfigureTransport), whose pool the clone would share, and the caller's
// transport is left as it is.
func (t *Transport) newConns() *http.Transport {
	t.freshOnce.Do(func() {
		ht, ok := t.base.(*http.Transport)
		if !ok {
			return
		}
		c := ht.Clone()
		if c.TLSNextProto["h2"] != nil {
			// net/http's own HTTP/2 is set up by each transport for
			// itself, after Clone; an upgrade in the map came with the
			// base, and puts the clone's connections in the base's pool.
			return
		}
		c.DisableKeepAlives = true
		t.fresh = c
	})
	return t.fresh
}

// resumeTLS gives tr, a transport of the Transport's own, a TLS client
// session cache, unless its TLS config has one: a new connection to a host
// it has reached before (a retry's, once a failed one was closed) then
// resumes the session, an abbreviated handshake that spares the server the
// signature and the certificate a full one costs. The cache holds the
// sessions of crypto/tls's default of 64 hosts, the least recently used
// going first. A config tr has is cloned, not changed, in case another
// transport shares it.
func resumeTLS(tr *http.Transport) {
	cfg := &tls.Config{}
	if tr.TLSClientConfig != nil {
		if tr.TLSClientConfig.ClientSessionCache != nil {
			return
		}
		cfg = tr.TLSClientConfig.Clone()
	}
	cfg.ClientSessionCache = tls.NewLRUClientSessionCache(0)
	tr.TLSClientConfig = cfg
}

// defaultBase returns go-cleanhttp's pooled transport, keeping as many idle
// connections per host as in all (100). Its own per-host default,
// GOMAXPROCS+1, closes the connections of concurrent callers as soon as they
// finish, so a struggling dependency would see a new connection, and
// perhaps a TLS handshake, for most requests just when it can least afford
// them. The connections it does open resume TLS sessions (resumeTLS).
func defaultBase() *http.Transport {
	tr := cleanhttp.DefaultPooledTransport()
	tr.MaxIdleConnsPerHost = defaultIdlePerHost
	tr.DialContext = base.NewDialer().DialContext
	resumeTLS(tr)
	reportProxyRefusals(tr, true)
	return tr
}
