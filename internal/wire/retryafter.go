package wire

import "net/http"

// HasRetryAfter reports whether h carries any of the headers by which a
// server asks for a delay.
func HasRetryAfter(h http.Header) bool {
	return len(h["Retry-After"]) > 0 || len(h["Retry-After-Ms"]) > 0 || len(h["X-Ms-Retry-After-Ms"]) > 0
}
