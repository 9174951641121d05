package wire

import (
	"net/http"
	"strings"
)

// DocKind is the format of an error document.
type DocKind uint8

const (
	DocNone DocKind = iota
	DocJSON         // not one that is read
	DocXML
	DocCBOR
	DocUnknown
	// JSON
	// XML
	// CBOR, as Smithy RPC v2 CBOR sends it
	// no Content-Type: sniff the body
)

// ErrorDocumentKind reads the format of a response's body from its
// Content-Type: the media types AWS services send their errors in. The
// Smithy-Protocol header of RPC v2 CBOR names the format whatever the
// Content-Type.
func ErrorDocumentKind(h http.Header) DocKind {
	if v := h["Smithy-Protocol"]; len(v) > 0 && TrimOWS(v[0]) == "rpc-v2-cbor" {
		return DocCBOR
	}
	v := h["Content-Type"]
	if len(v) == 0 {
		return DocUnknown
	}
	switch MediaType(v[0]) {
	case "application/x-amz-json-1.0", "application/x-amz-json-1.1", "application/json":
		return DocJSON
	case "text/xml", "application/xml":
		return DocXML
	case "application/cbor":
		return DocCBOR
	}
	return DocNone
}

// MediaType returns the media type of a Content-Type value in lower case,
// without parameters. It allocates only for a value with upper-case letters.
func MediaType(v string) string {
	if i := strings.IndexByte(v, ';'); i >= 0 {
		v = v[:i]
	}
	return LowerASCII(TrimOWS(v))
}

// LowerASCII returns s with ASCII letters in lower case, as host names
// compare. It allocates only if s has an upper-case letter.
func LowerASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; 'A' <= c && c <= 'Z' {
			return strings.ToLower(s)
		}
	}
	return s
}
