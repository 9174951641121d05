package server

import (
	"context"
	"net/http"
	"time"

	"github.com/retryhttp/retryhttp/deadline"
	"github.com/retryhttp/retryhttp/internal/config"
	"github.com/retryhttp/retryhttp/internal/deadlinefmt"
	"github.com/retryhttp/retryhttp/internal/layer"
)

// The defaults of an incoming deadline (Deadline).
const (
	// defaultMaxDeadline is the longest deadline a caller can give an
	// incoming request (MaxDeadline): as long as the Transport waits on a
	// Retry-After, and for the same reason: past a minute, a caller is
	// better served by an error than by a service held for it.
	defaultMaxDeadline = time.Minute
	// defaultMargin is taken off an incoming deadline for the way back
	// (DeadlineMargin). The time a caller sends is its time left when it
	// sent the request: by the time the handler reads it, the request has
	// crossed the network, and the handler's answer must cross it back, and
	// be read by a caller that may be busy, before the caller stops
	// waiting. A round trip between the zones of a cloud region takes about
	// 1 ms (within a zone, a fraction of that); the second millisecond is
	// for the layers' own scheduling: in a chain of five services on two
	// busy cores (the bench module's deadline scenario), a margin of 1 ms
	// let the caller's deadline cut off about one request in eight before
	// its answer arrived, 2 ms one in twenty to fifty. It costs a 100 ms
	// deadline 2% per layer.
	defaultMargin = 2 * time.Millisecond
)

// An Option configures a Handler.
type Option func(*config.Server)

func newConfig(opts []Option) config.Server {
	c := config.Server{MaxDeadline: defaultMaxDeadline, Margin: defaultMargin}
	for _, o := range opts {
		if o == nil {
			panic("server: Handler: nil Option")
		}
		o(&c)
	}
	if c.Tuned != "" && c.Formats == nil {
		panic("server: Handler: " + c.Tuned + " does nothing without Deadline")
	}
	return c
}

// tuned records that option, which only tunes Deadline, was given.
func tuned(c *config.Server, option string) {
	if c.Tuned == "" {
		c.Tuned = option
	}
}

// Deadline makes the deadline a caller sends in any of the given formats
// (as retryhttp.WithDeadlineHeader sends it) the incoming request's: its
// context gets the time the header names, from the moment the handler
// reads it, less a margin for the way back (DeadlineMargin, 2 ms), so that
// the handler, and its own calls through a Transport made with the
// request's context, stop when the caller stops waiting, and a Transport
// with WithDeadlineHeader sends the time left on to the next layer. It is
// off by default.
//
//   - The incoming deadline never extends the context's own (a deadline
//     the server set before Handler), and is capped at MaxDeadline (one
//     minute by default), so that a caller cannot hold a handler for an hour.
//     A request without a deadline header keeps its context as it is.
//   - A request whose deadline has passed when it arrives (0 left, as gRPC's
//     "0n" says, or no more than the margin) is answered at once with 504
//     Gateway Timeout and "X-Should-Retry: false", without running the
//     handler: no one is waiting for its answer.
//   - A value that is not the format (negative, a fraction, a missing or
//     unknown unit, spaces inside, a list, more digits than the format
//     allows, 0 in Connect's or your own millisecond header) is ignored, as
//     if absent, and reported to OnMalformedDeadline, never answered with an
//     error: a bad header must not fail a request its handler could serve.
//     Envoy's 0 means no timeout, and sets none.
//   - When several values arrive, repeated or in several formats, the
//     shortest well-formed one counts: any caller in the path could have
//     sent it, and a deadline can only be shortened by another.
//
// It panics if no format is given or a format is not a valid header name.
func Deadline(formats ...deadline.Format) Option {
	formats = deadlinefmt.Check("server: Deadline", formats)
	return func(c *config.Server) { c.Formats = formats }
}

// MaxDeadline sets the longest deadline a caller can give an incoming
// request with Deadline; a longer one is cut to it (the margin is taken off
// first). It must be positive. The default is one minute: as long as a
// Transport waits on a Retry-After, and for the same reason: past a
// minute, a caller is better served by an error than by a service held for
// it.
func MaxDeadline(d time.Duration) Option {
	if d <= 0 {
		panic("server: MaxDeadline: duration must be positive, got " + d.String())
	}
	return func(c *config.Server) { c.MaxDeadline = d; tuned(c, "MaxDeadline") }
}

// DeadlineMargin sets the time taken off an incoming deadline (Deadline)
// for the way back: the request's trip to the handler, and the answer's to
// the caller. It must not be negative. The default is 2 ms: about 1 ms for
// a round trip between the zones of a cloud region, and 1 ms for the
// layers' own scheduling on a busy host; it costs a 100 ms deadline 2% per
// layer. A service whose callers are further away sets more.
func DeadlineMargin(d time.Duration) Option {
	if d < 0 {
		panic("server: DeadlineMargin: negative duration " + d.String())
	}
	return func(c *config.Server) { c.Margin = d; tuned(c, "DeadlineMargin") }
}

// OnMalformedDeadline calls fn with each malformed deadline value an
// incoming request carries (Deadline): the request, which fn must not
// modify, the header's format, and the value as it arrived, which a caller
// chose and which a log must treat as such. fn runs on the request's
// goroutine before the handler; it must be fast and safe for concurrent use.
// Count the values with it, in the metrics of your choice:
//
//	var malformed atomic.Int64
//	server.OnMalformedDeadline(func(*http.Request, deadline.Format, string) { malformed.Add(1) })
//
// Each OnMalformedDeadline adds a hook: several are called in the order of
// their options.
func OnMalformedDeadline(fn func(r *http.Request, format deadline.Format, value string)) Option {
	if fn == nil {
		panic("server: OnMalformedDeadline: nil function")
	}
	return func(c *config.Server) {
		tuned(c, "OnMalformedDeadline")
		if prev := c.OnMalformed; prev != nil {
			c.OnMalformed = func(r *http.Request, f deadline.Format, v string) {
				prev(r, f, v)
				fn(r, f, v)
			}
			return
		}
		c.OnMalformed = fn
	}
}

// incoming returns the shortest well-formed time left among r's deadline
// headers, and whether there is one, reporting each malformed value.
func incoming(c *config.Server, r *http.Request) (time.Duration, bool) {
	var least time.Duration
	found := false
	for _, f := range c.Formats {
		for _, v := range r.Header[string(f)] {
			d, kind := deadlinefmt.Parse(string(f), v)
			switch kind {
			case deadlinefmt.Malformed:
				if c.OnMalformed != nil {
					c.OnMalformed(r, f, v)
				}
			case deadlinefmt.Set:
				if !found || d < least {
					least, found = d, true
				}
			}
		}
	}
	return least, found
}

// withDeadline returns the context r is to be served under: r's own, or
// one with the deadline r's headers name, and its cancel function. When
// that deadline has passed, it answers r with 504 and returns false.
func withDeadline(c *config.Server, w http.ResponseWriter, r *http.Request) (context.Context, context.CancelFunc, bool) {
	left, ok := incoming(c, r)
	if !ok {
		return r.Context(), nil, true
	}
	left -= c.Margin
	if left <= 0 {
		w.Header().Set(layer.ShouldRetryHeader, "false")
		http.Error(w, "the caller's deadline had passed when the request arrived", http.StatusGatewayTimeout)
		return nil, nil, false
	}
	ctx, cancel := context.WithTimeout(r.Context(), min(left, c.MaxDeadline))
	return ctx, cancel, true
}
