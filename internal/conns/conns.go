// Package conns holds what a Transport's attempts go through below the
// retry loop: the default base (go-cleanhttp's pooled transport with
// retryhttp's dialer and TLS session resumption), the clone of a base that
// dials a connection per request for a retry that must not go down the one
// that failed, the report of a proxy's refusal of a CONNECT as a typed
// error, and one attempt's exchange within the per-attempt timeout. It is
// given a base and a request; it never retries, never modifies a
// transport the caller made (it clones one), and never returns both a
// response and an error.
package conns

import (
	"context"
	"crypto/tls"
	"errors"
	"net/http"
	"net/url"
	"reflect"
	"slices"

	"github.com/hashicorp/go-cleanhttp"
	"github.com/retryhttp/retryhttp/base"
	"github.com/retryhttp/retryhttp/classify"
)

// idlePerHost is how many idle connections the default base keeps per
// host.
const idlePerHost = 100

// DefaultBase returns go-cleanhttp's pooled transport, keeping as many
// idle connections per host as in all (100). Its own per-host default,
// GOMAXPROCS+1, closes the connections of concurrent callers as soon as
// they finish, so a struggling dependency would see a new connection, and
// perhaps a TLS handshake, for most requests just when it can least afford
// them. It dials with base.Dialer, and the connections it opens resume TLS
// sessions (ResumeTLS).
func DefaultBase() *http.Transport {
	tr := cleanhttp.DefaultPooledTransport()
	tr.MaxIdleConnsPerHost = idlePerHost
	tr.DialContext = base.NewDialer().DialContext
	ResumeTLS(tr)
	ReportProxyRefusals(tr, true)
	return tr
}

// ResumeTLS gives tr, a transport of the Transport's own, a TLS client
// session cache, unless its TLS config has one: a new connection to a host
// it has reached before (a retry's, once a failed one was closed) then
// resumes the session, an abbreviated handshake that spares the server the
// signature and the certificate a full one costs. The cache holds the
// sessions of crypto/tls's default of 64 hosts, the least recently used
// going first. A config tr has is cloned, not changed, in case another
// transport shares it.
func ResumeTLS(tr *http.Transport) {
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

// ReportProxyRefusals returns rt, or, when rt is an *http.Transport with a
// Proxy, a transport that reports a proxy's refusal of a CONNECT as a
// *classify.ProxyConnectError: rt itself when own (a base the Transport
// made), otherwise a clone of it, so that the caller's transport is never
// modified. A hook the base has already runs first, and its error stands.
func ReportProxyRefusals(rt http.RoundTripper, own bool) http.RoundTripper {
	ht, ok := rt.(*http.Transport)
	if !ok || ht.Proxy == nil {
		return rt
	}
	if !own {
		ht = ht.Clone()
	}
	prev := ht.OnProxyConnectResponse
	ht.OnProxyConnectResponse = func(ctx context.Context, proxy *url.URL, req *http.Request, resp *http.Response) error {
		if prev != nil {
			if err := prev(ctx, proxy, req, resp); err != nil {
				return err
			}
		}
		if resp.StatusCode == http.StatusOK {
			return nil
		}
		return &classify.ProxyConnectError{StatusCode: resp.StatusCode, Status: resp.Status, Header: resp.Header.Clone()}
	}
	return ht
}

// ProxyRefusal returns the ProxyConnectError in err's chain, or nil.
func ProxyRefusal(err error) *classify.ProxyConnectError {
	var pe *classify.ProxyConnectError
	if err != nil && errors.As(err, &pe) {
		return pe
	}
	return nil
}

// Fresh returns the transport of a retry that must not go down the
// connection that failed, a misdirected request's: a clone of rt with
// keep-alives off, so that each of its requests dials a connection of its
// own, closed after its response, over HTTP/2 too, where rt's connection
// to the host carries every other request and cannot be left without
// cutting theirs. It shares rt's dialer (a base.Dialer dials the addresses
// that failed last) and TLS config (its session cache: the new connection
// resumes TLS). It returns nil when rt is not an *http.Transport, or when
// its HTTP/2 is its own (golang.org/x/net/http2's ConfigureTransport),
// whose pool the clone would share.
func Fresh(rt http.RoundTripper) *http.Transport {
	ht, ok := rt.(*http.Transport)
	if !ok {
		return nil
	}
	c := ht.Clone()
	if c.TLSNextProto["h2"] != nil {
		// net/http's own HTTP/2 is set up by each transport for itself,
		// after Clone; an upgrade in the map came with the base, and puts
		// the clone's connections in the base's pool.
		return nil
	}
	c.DisableKeepAlives = true
	return c
}

// CheckResult enforces the RoundTripper contract on a base's result.
func CheckResult(resp *http.Response, err error) (*http.Response, error) {
	switch {
	case err != nil && resp != nil:
		if resp.Body != nil {
			resp.Body.Close()
		}
		return nil, err
	case err == nil && resp == nil:
		return nil, errors.New("base RoundTripper returned a nil response and a nil error")
	case resp != nil && resp.Body == nil:
		resp.Body = http.NoBody
	}
	return resp, err
}

// Under reports whether is holds for rt, or for a RoundTripper its Unwrap
// method leads to, however many wrappers deep. The walk stops at a
// RoundTripper without Unwrap, at one whose Unwrap returns nil, and at a
// wrapper it has met already: wrappers that unwrap to each other (and,
// past 65,536, at wrappers by value that unwrap to new ones without end).
func Under(rt http.RoundTripper, is func(http.RoundTripper) bool) bool {
	var seen []uintptr // the wrappers met, by address, when they have one
	byValue := 0
	for rt != nil {
		if is(rt) {
			return true
		}
		u, ok := rt.(interface{ Unwrap() http.RoundTripper })
		if !ok {
			return false
		}
		if v := reflect.ValueOf(rt); v.Kind() == reflect.Pointer {
			p := v.Pointer()
			if slices.Contains(seen, p) {
				return false
			}
			seen = append(seen, p)
		} else if byValue++; byValue > 1<<16 {
			// Wrappers by value that unwrap to new ones without end:
			// no chain a program builds is that deep.
			return false
		}
		rt = u.Unwrap()
	}
	return false
}

// CheckRequest rejects a request no transport can send, before any
// attempt.
func CheckRequest(req *http.Request) error {
	switch {
	case req == nil:
		return errors.New("nil Request")
	case req.URL == nil:
		return errors.New("nil Request.URL")
	case req.Header == nil:
		return errors.New("nil Request.Header")
	}
	return nil
}
