package retryhttp

import (
	"crypto/tls"
	"net/http"
)

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
