package retryhttp

import "net/http"

// notProcessed reports whether resp says that the server did not process
// the request: a 421 Misdirected Request, which RFC 9110 lets a client
// retry whatever its method, on another connection.
func notProcessed(resp *http.Response) bool {
	return resp != nil && resp.StatusCode == http.StatusMisdirectedRequest
}

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
