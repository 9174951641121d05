package wire

import (
	"net/http"
	"strconv"
	"strings"
)

// SetField sets the field key, given in canonical form, of h to the one
// value v, and removes every entry of h whose name is key in another case:
// a caller may write a key as it likes (h["range"]), and net/http sends
// each entry as it is, so that both would reach the server as two values of
// one field, and a server taking either could take the caller's.
func SetField(h http.Header, key, v string) {
	DropOtherCases(h, key)
	h[key] = []string{v}
}

// DropOtherCases removes every entry of h whose name is key, canonical, in
// another case.
func DropOtherCases(h http.Header, key string) {
	for k := range h {
		if len(k) == len(key) && k != key && strings.EqualFold(k, key) {
			delete(h, k)
		}
	}
}

// HasField reports whether h has an entry for the field key, canonical, in
// any case.
func HasField(h http.Header, key string) bool {
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

// OnlyValue returns the value of the field key of h when the field occurs
// once, and reports false when it occurs more than once: a representation
// with two validators, or two ranges, says nothing reliable.
func OnlyValue(h http.Header, key string) (string, bool) {
	switch vs := h[key]; len(vs) {
	case 0:
		return "", true
	case 1:
		return vs[0], true
	}
	return "", false
}

// ValidHeaderName reports whether name is a valid HTTP field name (a token).
func ValidHeaderName(name string) bool {
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte("\"(),/:;<=>?@[\\]{}", c) >= 0 {
			return false
		}
	}
	return true
}

// AttemptValue is the value of an attempt header: the attempt's number and
// the most there will be, as "2/3".
func AttemptValue(attempt, max int) string {
	return strconv.Itoa(attempt) + "/" + strconv.Itoa(max)
}
