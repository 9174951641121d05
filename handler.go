package retryhttp

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"sync/atomic"

	"github.com/retryhttp/retryhttp/internal/wire"
)

// Handler wraps next, the handler of a service that calls its own
// dependencies through Transports, so that in a chain of such services only
// the layer closest to a failure retries it.
//
// When every service in a chain A -> B -> C -> D -> E retries three times, a
// failing E sees 3⁴ = 81 calls for each request to A: each layer multiplies
// the retries of the layers below. With Handler around B, C and D, a layer
// that gave up on its dependency (attempts spent, budget empty, or the
// dependency itself said not to retry) and answers with a status worth
// retrying (408, 429 or 5xx) adds "X-Should-Retry: false" to its response.
// The Transport of the layer above honours that signal, as does any client
// that follows classify.ShouldRetry's convention, so E sees only the
// attempts of D.
//
// The Transport learns which incoming request it serves from the request's
// context: make outgoing requests with the incoming request's context (or
// one derived from it), as http.NewRequestWithContext(r.Context(), ...)
// does. The signal can only be added while the status has not been written,
// so a handler that writes its status before calling its dependencies sends
// none.
//
// A dependency that adaptive throttling refused a request to
// (WithAdaptiveThrottling, ErrThrottled) is down as far as this layer
// knows: a 5xx status the handler then answers with becomes 503 Service
// Unavailable, with "X-Should-Retry: false", whatever 5xx the handler
// chose for the error.
//
// Handler has the shape of the middleware of most routers
// (func(http.Handler) http.Handler). NewHandler takes options too: with
// HandlerDeadline, the deadline a caller sends (WithDeadlineHeader, gRPC,
// Envoy, Connect) becomes the incoming request's.
func Handler(next http.Handler) http.Handler {
	if next == nil {
		panic("retryhttp: Handler: nil handler")
	}
	return NewHandler(next)
}

// NewHandler is Handler, configured by opts: HandlerDeadline and the
// options that go with it. It panics on a nil handler or a nil option.
func NewHandler(next http.Handler, opts ...HandlerOption) http.Handler {
	if next == nil {
		panic("retryhttp: NewHandler: nil handler")
	}
	c := newHandlerConfig(opts)
	if c.formats == nil {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			serve(next, w, r, r.Context())
		})
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel, ok := c.deadline(w, r)
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
	state := &serving{}
	r = r.WithContext(context.WithValue(ctx, servingKey{}, state))
	next.ServeHTTP(wrapWriter(w, state), r)
}

// serving records, for one incoming request, whether a Transport gave up on
// a dependency while serving it, and whether adaptive throttling refused a
// request to one. Transports may record from any goroutine.
type serving struct{ gaveUp, shed atomic.Bool }

type servingKey struct{}

// markGaveUp records in ctx's incoming request, if any, that a dependency
// was given up on.
func markGaveUp(ctx context.Context) {
	if s, ok := ctx.Value(servingKey{}).(*serving); ok {
		s.gaveUp.Store(true)
	}
}

// markShed records in ctx's incoming request, if any, that a request to a
// dependency was refused by adaptive throttling, which is giving up on it.
func markShed(ctx context.Context) {
	if s, ok := ctx.Value(servingKey{}).(*serving); ok {
		s.gaveUp.Store(true)
		s.shed.Store(true)
	}
}

// signalWriter adds the do-not-retry signal to a failure response of a
// request whose dependencies were given up on.
type signalWriter struct {
	http.ResponseWriter
	state       *serving
	wroteHeader bool
}

func (w *signalWriter) WriteHeader(code int) {
	if !w.wroteHeader && code >= 200 { // 1xx responses are not the final status
		w.wroteHeader = true
		if code >= 500 && code <= 599 && w.state.shed.Load() {
			code = http.StatusServiceUnavailable
		}
		if failureStatus(code) && w.state.gaveUp.Load() {
			w.Header().Set(wire.ShouldRetryHeader, "false")
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
func wrapWriter(w http.ResponseWriter, state *serving) http.ResponseWriter {
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
