// Package stream configures how a retryhttp Transport takes care of event
// streams (text/event-stream): the server-sent events in which LLM APIs
// stream a generation, MCP servers push, and feeds publish. The care is
// off by default; retryhttp.WithStreams turns it on, with this package's
// options.
//
// # The first event
//
// An API that fails after it sent 200 OK says so in the stream's first
// event: Anthropic's overloaded API opens with an error event, and so can
// OpenAI's. A Transport WithStreams holds a 200 stream until its first
// event, within FirstEventWait and the request's deadline, and its
// classifiers judge the attempt by it: Errors, in front of them, retries
// those vendors' transient errors as their 529, 503 or 429 would be
// retried, and First gives the event to a Classifier of your own. A
// stream may be retried only then, before any of it reaches the caller,
// and only when its request may be sent again (a POST that generates must
// be declared resendable, as the LLM recipe does). The caller reads the
// stream it is given byte for byte, its first event included.
//
// # A stream cut
//
// A GET stream cut after its first event (a reset, a body that ends
// without its final chunk) is resumed as a browser's EventSource resumes
// it: asked for again with Last-Event-ID, the id of the last event the
// caller read, after the stream's retry field (within the Transport's
// Retry-After limit) or the backoff, paid from the retry budget, at most
// Limit times in a row (30 s of events after a resume start the count
// afresh). The caller's Read goes on with the next event: it is given
// whole events only, so that no event is half read or read twice. A 204
// to a resume ends the stream, as the protocol says. A stream whose
// server set no id is not resumed: it could not be continued without
// repeating it.
//
// Any other stream that fails after its first event reached the caller
// (a POST's generation above all, which a resend would run and charge
// again) ends the caller's read with an *Error saying how much was read.
// It is never sent again: a generation is never spliced from two
// attempts. A stream that ends cleanly ends with io.EOF.
//
// # Bounds
//
// The bytes of a stream are the server's, and untrusted: a line over 256
// KiB or an event over 1 MiB is not held for, the stream then passing to
// the caller as it comes, unresumed. The first event is awaited on a
// goroutine of the body's own, so that the wait is bounded without cutting
// the stream: at worst, a response is returned FirstEventWait late,
// unjudged, and a stream is asked for Limit+1 times in a row, each after a
// delay that the Retry-After limit bounds. A response that is not an event
// stream costs a header lookup.
package stream
