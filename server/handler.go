package server

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"

	"github.com/retryhttp/retryhttp/internal/layer"
)

// Handler wraps next, the handler of a service that calls its own
// dependencies through retryhttp Transports, so that in a chain of such
// services only the layer closest to a failure retries it. When a
// Transport gave up on a dependency while next served the request
// (attempts spent, budget empty, the dependency said not to retry, no time
// left) and next answers with a status worth retrying (408, 429 or 5xx),
// the response carries "X-Should-Retry: false", which the Transport of the
// layer above honours. When adaptive throttling refused a request to a
// dependency (retryhttp.ErrThrottled), the dependency is down as far as
// this layer knows: a 5xx next answers becomes 503 Service Unavailable,
// with the signal, whatever 5xx next chose for the error. With Deadline,
// the deadline a caller sends becomes the incoming request's.
//
// The Transport learns which incoming request it serves from the request's
// context: make outgoing requests with the incoming request's context (or
// one derived from it), as http.NewRequestWithContext(r.Context(), ...)
// does. The signal can only be added while the status has not been written,
// so a handler that writes its status before calling its dependencies sends
// none.
//
// A router whose middleware is a func(http.Handler) http.Handler takes it
// as func(h http.Handler) http.Handler { return server.Handler(h, opts...) }.
// It panics on a nil handler or a nil Option.
func Handler(next http.Handler, opts ...Option) http.Handler {
	if next == nil {
		panic("server: Handler: nil handler")
	}
	c := newConfig(opts)
	if c.Formats == nil {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			serve(next, w, r, r.Context())
		})
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel, ok := withDeadline(&c, w, r)
		if !ok {
			return // answered: the deadline had passed
		}
		if cancel != nil {
			defer cancel()
		}
		serve(next, w, r, ctx)
	})
}

// serve runs next for r under ctx, r's context or one derived from it, with
// the state through which Transports report giving up.
func serve(next http.Handler, w http.ResponseWriter, r *http.Request, ctx context.Context) {
	state := &layer.Serving{}
	r = r.WithContext(layer.NewContext(ctx, state))
	next.ServeHTTP(wrapWriter(w, state), r)
}

// signalWriter adds the do-not-retry signal to a failure response of a
// request whose dependencies were given up on.
type signalWriter struct {
	http.ResponseWriter
	state       *layer.Serving
	wroteHeader bool
}

func (w *signalWriter) WriteHeader(code int) {
	if !w.wroteHeader && code >= 200 { // 1xx responses are not the final status
		w.wroteHeader = true
		if code >= 500 && code <= 599 && w.state.Shed() {
			code = http.StatusServiceUnavailable
		}
		if layer.Failure(code) && w.state.GaveUp() {
			w.Header().Set(layer.ShouldRetryHeader, "false")
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *signalWriter) Write(b []byte) (int, error) {
	w.wroteHeader = true // an implicit 200
	return w.ResponseWriter.Write(b)
}

// Unwrap gives http.ResponseController the underlying writer, for
// deadlines, full duplex and whatever else it offers.
func (w *signalWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// wrapWriter returns a signalWriter around w that has each of the optional
// interfaces http.Flusher, http.Hijacker, io.ReaderFrom and http.Pusher
// exactly when w has it, so that handlers asserting them directly, and
// http.ResponseController, see what w can do.
func wrapWriter(w http.ResponseWriter, state *layer.Serving) http.ResponseWriter {
	sw := &signalWriter{ResponseWriter: w, state: state}
	var mask int
	if _, ok := w.(http.Flusher); ok {
		mask |= 1
	}
	if _, ok := w.(http.Hijacker); ok {
		mask |= 2
	}
	if _, ok := w.(io.ReaderFrom); ok {
		mask |= 4
	}
	if _, ok := w.(http.Pusher); ok {
		mask |= 8
	}
	switch mask {
	case 0:
		return sw
	case 1:
		return struct {
			*signalWriter
			flusher
		}{sw, flusher{sw}}
	case 2:
		return struct {
			*signalWriter
			hijacker
		}{sw, hijacker{sw}}
	case 3:
		return struct {
			*signalWriter
			flusher
			hijacker
		}{sw, flusher{sw}, hijacker{sw}}
	case 4:
		return struct {
			*signalWriter
			readerFrom
		}{sw, readerFrom{sw}}
	case 5:
		return struct {
			*signalWriter
			flusher
			readerFrom
		}{sw, flusher{sw}, readerFrom{sw}}
	case 6:
		return struct {
			*signalWriter
			hijacker
			readerFrom
		}{sw, hijacker{sw}, readerFrom{sw}}
	case 7:
		return struct {
			*signalWriter
			flusher
			hijacker
			readerFrom
		}{sw, flusher{sw}, hijacker{sw}, readerFrom{sw}}
	case 8:
		return struct {
			*signalWriter
			pusher
		}{sw, pusher{sw}}
	case 9:
		return struct {
			*signalWriter
			flusher
			pusher
		}{sw, flusher{sw}, pusher{sw}}
	case 10:
		return struct {
			*signalWriter
			hijacker
			pusher
		}{sw, hijacker{sw}, pusher{sw}}
	case 11:
		return struct {
			*signalWriter
			flusher
			hijacker
			pusher
		}{sw, flusher{sw}, hijacker{sw}, pusher{sw}}
	case 12:
		return struct {
			*signalWriter
			readerFrom
			pusher
		}{sw, readerFrom{sw}, pusher{sw}}
	case 13:
		return struct {
			*signalWriter
			flusher
			readerFrom
			pusher
		}{sw, flusher{sw}, readerFrom{sw}, pusher{sw}}
	case 14:
		return struct {
			*signalWriter
			hijacker
			readerFrom
			pusher
		}{sw, hijacker{sw}, readerFrom{sw}, pusher{sw}}
	case 15:
		return struct {
			*signalWriter
			flusher
			hijacker
			readerFrom
			pusher
		}{sw, flusher{sw}, hijacker{sw}, readerFrom{sw}, pusher{sw}}
	}
	return sw // unreachable: mask has four bits
}

type flusher struct{ *signalWriter }

func (w flusher) Flush() {
	w.wroteHeader = true // an implicit 200
	w.ResponseWriter.(http.Flusher).Flush()
}

type hijacker struct{ *signalWriter }

func (w hijacker) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return w.ResponseWriter.(http.Hijacker).Hijack()
}

type readerFrom struct{ *signalWriter }

func (w readerFrom) ReadFrom(r io.Reader) (int64, error) {
	w.wroteHeader = true // an implicit 200
	return w.ResponseWriter.(io.ReaderFrom).ReadFrom(r)
}

type pusher struct{ *signalWriter }

func (w pusher) Push(target string, opts *http.PushOptions) error {
	return w.ResponseWriter.(http.Pusher).Push(target, opts)
}
