package retryhttp

import (
	"net/http"
	"strings"
)

// setField sets the field key, given in canonical form, of h to the one
// value v, and removes every entry of h whose name is key in another case:
// a caller may write a key as it likes (h["range"]), and net/http sends
// each entry as it is, so that both would reach the server as two values of
// one field, and a server taking either could take the caller's.
func setField(h http.Header, key, v string) {
	dropOtherCases(h, key)
	h[key] = []string{v}
}

// dropOtherCases removes every entry of h whose name is key, canonical, in
// another case.
func dropOtherCases(h http.Header, key string) {
	for k := range h {
		if len(k) == len(key) && k != key && strings.EqualFold(k, key) {
			delete(h, k)
		}
	}
}

// hasField reports whether h has an entry for the field key, canonical, in
// any case.
func hasField(h http.Header, key string) bool {
	if _, ok := h[key]; ok {
		return true
	}
	for k := range h {
		if len(k) == len(key) && strings.EqualFold(k, key) {
			return true
		}
	}
	return false
}

// onlyValue returns the value of the field key of h when the field occurs
// once, and reports false when it occurs more than once: a representation
// with two validators, or two ranges, says nothing reliable.
func onlyValue(h http.Header, key string) (string, bool) {
	switch vs := h[key]; len(vs) {
	case 0:
		return "", true
	case 1:
		return vs[0], true
	}
	return "", false
}
