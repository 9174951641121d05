package classify

import (
	"errors"
	"net/http"
)

// A ProxyConnectError reports that the proxy a request was sent through
// answered its CONNECT with a status other than 200, so that no connection
// to the destination was made: the request never reached it. net/http
// reports such a refusal as an error without a type, carrying the status
// text alone; a Transport whose base is an *http.Transport with a Proxy
// reports it as a ProxyConnectError instead (see WithBase).
//
// Errors judges it as Status judges a response with the
// same status: 502, 503 and 429 are retried, 407 (the proxy wants
// credentials) is final; a retry waits for the proxy's Retry-After. Since
// the request never reached the destination, it is retried whatever its
// method.
type ProxyConnectError struct {
	// StatusCode is the proxy's status code.
	StatusCode int
	// Status is the proxy's status line without its protocol, such as
	// "503 Service Unavailable".
	Status string
	// Header is the header of the proxy's answer.
	Header http.Header
}

func (e *ProxyConnectError) Error() string {
	return "retryhttp: proxy refused CONNECT: " + e.Status
}

// proxyRefusal returns the ProxyConnectError in err's chain, or nil.
func proxyRefusal(err error) *ProxyConnectError {
	var pe *ProxyConnectError
	if err != nil && errors.As(err, &pe) {
		return pe
	}
	return nil
}
