package retryhttp

import (
	"context"
	"errors"
	"net/http"
	"net/url"

	"github.com/retryhttp/retryhttp/classify"
)

// reportProxyRefusals returns base, or, when base is an *http.Transport
// with a Proxy, a transport that reports a proxy's refusal of a CONNECT as
// a *ProxyConnectError: base itself when own (a base the Transport made),
// otherwise a clone of it, so that the caller's transport is never
// modified. A hook the base has already runs first, and its error stands.
func reportProxyRefusals(base http.RoundTripper, own bool) http.RoundTripper {
	ht, ok := base.(*http.Transport)
	if !ok || ht.Proxy == nil {
		return base
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

// proxyRefusal returns the ProxyConnectError in err's chain, or nil.
func proxyRefusal(err error) *classify.ProxyConnectError {
	var pe *classify.ProxyConnectError
	if err != nil && errors.As(err, &pe) {
		return pe
	}
	return nil
}

// signalHeader returns the header in which the outcome of an attempt may
// ask for a delay: the response's, or that of a proxy's refusal; nil when
// there is neither.
func signalHeader(resp *http.Response, err error) http.Header {
	if resp != nil {
		return resp.Header
	}
	if pe := proxyRefusal(err); pe != nil {
		return pe.Header
	}
	return nil
}
