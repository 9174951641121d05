package wire

import (
	"net/http"
	"strings"
)

// A HostKey identifies a destination: a lower-case scheme, and a lower-case
// host with the scheme's default port removed.
type HostKey struct {
	Scheme, Host string
}

// RequestKey returns the destination of req: the URL's scheme and host
// (req.Host when the URL has none), keyed as MakeKey does.
func RequestKey(req *http.Request) HostKey {
	var scheme, host string
	if req.URL != nil {
		scheme, host = req.URL.Scheme, req.URL.Host
	}
	if host == "" {
		host = req.Host
	}
	return MakeKey(scheme, host)
}

// MakeKey keys a destination: scheme and host in lower case, the
// scheme's default port removed. It allocates only when the scheme or host
// has upper-case letters.
func MakeKey(scheme, host string) HostKey {
	scheme, host = LowerASCII(scheme), LowerASCII(host)
	switch {
	case scheme == "http":
		host = strings.TrimSuffix(host, ":80")
	case scheme == "https":
		host = strings.TrimSuffix(host, ":443")
	}
	return HostKey{scheme, host}
}
