// Package layer is what a Transport and the server Handler share about an
// incoming request: whether a Transport, calling a dependency for it, gave
// up, and whether adaptive throttling refused a request to one. The
// Handler puts a Serving in the incoming request's context; a Transport
// whose request carries that context (or one derived from it) marks it.
package layer

import (
	"context"
	"net/http"
	"sync/atomic"
)

// ShouldRetryHeader is the response header by which a server tells its
// callers whether to retry: the Handler sets it to "false".
const ShouldRetryHeader = "X-Should-Retry"

// A Serving records, for one incoming request, whether a Transport gave up
// on a dependency while serving it, and whether adaptive throttling refused
// a request to one. Transports may record from any goroutine.
type Serving struct{ gaveUp, shed atomic.Bool }

type servingKey struct{}

// NewContext returns ctx carrying s.
func NewContext(ctx context.Context, s *Serving) context.Context {
	return context.WithValue(ctx, servingKey{}, s)
}

// GaveUp reports whether a dependency was given up on.
func (s *Serving) GaveUp() bool { return s.gaveUp.Load() }

// Shed reports whether adaptive throttling refused a request to a
// dependency.
func (s *Serving) Shed() bool { return s.shed.Load() }

// MarkGaveUp records in ctx's incoming request, if any, that a dependency
// was given up on.
func MarkGaveUp(ctx context.Context) {
	if s, ok := ctx.Value(servingKey{}).(*Serving); ok {
		s.gaveUp.Store(true)
	}
}

// MarkShed records in ctx's incoming request, if any, that a request to a
// dependency was refused by adaptive throttling, which is giving up on it.
func MarkShed(ctx context.Context) {
	if s, ok := ctx.Value(servingKey{}).(*Serving); ok {
		s.gaveUp.Store(true)
		s.shed.Store(true)
	}
}

// Failure reports the statuses by which a dependency fails in a way a
// caller might retry: 408, 429 and 5xx.
func Failure(code int) bool {
	return code == http.StatusRequestTimeout || code == http.StatusTooManyRequests || (code >= 500 && code <= 599)
}
