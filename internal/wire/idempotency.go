package wire

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"strings"
)

// IdempotentMethod reports whether RFC 9110 defines m as idempotent: sending
// the request twice has the same effect on the server as sending it once.
// The empty method means GET.
func IdempotentMethod(m string) bool {
	switch m {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace,
		http.MethodPut, http.MethodDelete:
		return true
	}
	return false
}

// HasIdempotencyKey reports whether h names an idempotency key: a canonical
// Idempotency-Key or X-Idempotency-Key entry with a value that is not blank,
// or with no value at all. An entry whose value slice is empty is net/http's
// way (see http.Transport) to declare a request idempotent without sending
// the header, and stays such a declaration; a key that is empty or only
// spaces and tabs is sent on the wire, where no server can deduplicate on
// it, and counts as no key. An entry under another case of either name
// ("idempotency-key") is sent as the same field, and is a key when it holds
// a value that is not blank; net/http does not read it as a declaration.
func HasIdempotencyKey(h http.Header) bool {
	if KeyIn(h, "Idempotency-Key") || KeyIn(h, "X-Idempotency-Key") {
		return true
	}
	for k, vs := range h {
		if (strings.EqualFold(k, "Idempotency-Key") || strings.EqualFold(k, "X-Idempotency-Key")) && NotBlank(vs) {
			return true
		}
	}
	return false
}

// KeyIn reports whether h's entry name holds an idempotency key.
func KeyIn(h http.Header, name string) bool {
	vs, ok := h[name]
	if !ok {
		return false
	}
	return len(vs) == 0 || NotBlank(vs)
}

// NotBlank reports whether one of vs is more than spaces and tabs.
func NotBlank(vs []string) bool {
	for _, v := range vs {
		if TrimOWS(v) != "" {
			return true
		}
	}
	return false
}

// NewIdempotencyKey returns a random version 4 UUID, the form servers that
// honour Idempotency-Key most often expect.
func NewIdempotencyKey() string {
	var u [16]byte
	_, _ = rand.Read(u[:]) // crypto/rand.Read never returns an error.
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	var s [36]byte
	hex.Encode(s[0:8], u[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], u[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], u[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], u[8:10])
	s[23] = '-'
	hex.Encode(s[24:36], u[10:16])
	return string(s[:])
}
