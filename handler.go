package retryhttp

import (
	"context"
	"net/http"
	"sync/atomic"
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
// that follows ServerSignalClassifier's convention, so E sees only the
// attempts of D.
//
// The Transport learns which incoming request it serves from the request's
// context: make outgoing requests with the incoming request's context (or
// one derived from it), as http.NewRequestWithContext(r.Context(), ...)
// does. The signal can only be added while the status has not been written,
// so a handler that writes its status before calling its dependencies sends
// none.
func Handler(next http.Handler) http.Handler {
	if next == nil {
		panic("retryhttp: Handler: nil handler")
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		state := &serving{}
		r = r.WithContext(context.WithValue(r.Context(), servingKey{}, state))
		next.ServeHTTP(&signalWriter{ResponseWriter: w, state: state}, r)
	})
}

// serving records, for one incoming request, whether a Transport gave up on
// a dependency while serving it. Transports may record from any goroutine.
type serving struct{ gaveUp atomic.Bool }

type servingKey struct{}

// markGaveUp records in ctx's incoming request, if any, that a dependency
// was given up on.
func markGaveUp(ctx context.Context) {
	if s, ok := ctx.Value(servingKey{}).(*serving); ok {
		s.gaveUp.Store(true)
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
		if failureStatus(code) && w.state.gaveUp.Load() {
			w.Header().Set(ShouldRetryHeader, "false")
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *signalWriter) Write(b []byte) (int, error) {
	w.wroteHeader = true // an implicit 200
	return w.ResponseWriter.Write(b)
}

// Flush lets handlers that assert http.Flusher stream through the wrapper.
func (w *signalWriter) Flush() {
	w.wroteHeader = true
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap gives http.ResponseController the underlying writer, for Hijack,
// deadlines and the rest.
func (w *signalWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
