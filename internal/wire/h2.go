package wire

import "reflect"

// HTTP/2 error codes (RFC 9113, section 7) that the classifiers read.
const (
	H2InternalError = 0x2
	H2RefusedStream = 0x7
)

// H2StreamErrorCode returns the error code of an HTTP/2 stream reset in
// err's chain, as net/http's bundled HTTP/2 transport and
// golang.org/x/net/http2 report one, and whether there is one. Both types
// are read by reflection, by their package, name and fields: net/http's is
// unexported, and importing x/net would burden every user with it. A
// server controls the code of the reset but not the type of the error, so
// no text a server sends (a status line, GOAWAY debug data) can make an
// error look like a stream reset.
func H2StreamErrorCode(err error) (uint32, bool) {
	for _, e := range ErrorChain(err, 8) {
		v := reflect.ValueOf(e)
		t := v.Type()
		if t.Kind() != reflect.Struct {
			continue
		}
		switch {
		case t.PkgPath() == "net/http" && t.Name() == "http2StreamError",
			t.PkgPath() == "golang.org/x/net/http2" && t.Name() == "StreamError":
		default:
			continue
		}
		if code := v.FieldByName("Code"); code.IsValid() && code.Kind() == reflect.Uint32 {
			return uint32(code.Uint()), true
		}
	}
	return 0, false
}

// ErrorChain returns err and the errors it wraps, depth first, at most n.
func ErrorChain(err error, n int) []error {
	var out []error
	var walk func(error)
	walk = func(e error) {
		if e == nil || len(out) >= n {
			return
		}
		out = append(out, e)
		switch u := e.(type) {
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		case interface{ Unwrap() []error }:
			for _, w := range u.Unwrap() {
				walk(w)
			}
		}
	}
	walk(err)
	return out
}

// RefusedStream reports an HTTP/2 REFUSED_STREAM reset, by which the server
// says that it did not process the request (RFC 9113, section 8.7).
func RefusedStream(err error) bool {
	code, ok := H2StreamErrorCode(err)
	return ok && code == H2RefusedStream
}

// StreamReset reports an HTTP/2 stream reset with INTERNAL_ERROR, which is
// how a server aborts a request it failed while handling: the HTTP/2 form of
// a connection reset.
func StreamReset(err error) bool {
	code, ok := H2StreamErrorCode(err)
	return ok && code == H2InternalError
}
