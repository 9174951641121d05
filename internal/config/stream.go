package config

import "time"

// Stream is the configuration of the handling of event streams: package
// stream's options set it, and the root package reads it.
type Stream struct {
	// FirstEventWait is the longest a response that is an event stream
	// is held for its first event, at least 1 ms.
	FirstEventWait time.Duration
	// Limit is the most resumes a GET event stream gets without a
	// healthy period between them; 0 resumes none.
	Limit int
}

// NewStream returns the configuration of streams that the root's
// WithStreams() uses before any option: a first event awaited for 5 s, 10
// resumes. Package stream's option docs state these defaults.
func NewStream() Stream {
	return Stream{FirstEventWait: 5 * time.Second, Limit: 10}
}
