package stream

import (
	"strconv"
	"time"

	"github.com/retryhttp/retryhttp/internal/config"
)

// An Option configures the handling of event streams, given to
// retryhttp.WithStreams.
type Option func(*config.Stream)

// FirstEventWait sets the longest a response that is an event stream is
// held for its first event before it is returned as it is, unjudged by
// its first event: the caller then reads what a plain transport would
// have given it. The request's deadline bounds the wait too. The default
// is 5 s; d must be at least 1 ms.
func FirstEventWait(d time.Duration) Option {
	if d < time.Millisecond {
		panic("stream: FirstEventWait: must be at least 1ms, got " + d.String())
	}
	return func(c *config.Stream) { c.FirstEventWait = d }
}

// Limit sets the most resumes a GET event stream gets in a row: requests
// for the rest of the stream, with Last-Event-ID, each after a cut, with
// no healthy period between them (30 s and an event after a resume
// starts the count afresh). A stream cut once more ends the caller's read
// with an *Error. The default is 10; 0 resumes no stream.
func Limit(n int) Option {
	if n < 0 {
		panic("stream: Limit: negative, got " + strconv.Itoa(n))
	}
	return func(c *config.Stream) { c.Limit = n }
}
