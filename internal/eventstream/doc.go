// Package eventstream reads server-sent event streams (text/event-stream)
// as the WHATWG HTML standard parses them. It is given the bytes of a
// response body, which it does not trust; it decides where each event
// ends, what its type, data and id are, and which bytes of a body a
// caller may have without getting part of an event. The policy is the
// caller's: whether an event is an error worth a retry, whether and when a
// cut stream is reconnected, with what Last-Event-ID header and backoff.
//
// It never sends a request, never sleeps, never logs, never holds more
// than its Limits, and never hands a caller a byte the server did not
// send.
//
// # Parsing
//
// A Parser takes a stream in pieces of any size and stops at each
// boundary: a blank line, which dispatches an event if it has data, and a
// comment line outside an event. Lines end in CRLF, LF or CR, a CR at the
// end of one piece and an LF at the start of the next being one line end;
// a byte order mark at the very start is skipped. A field's name runs to
// the line's first colon, and its value loses one leading space: event
// sets the event's type, data adds a line to its data, id sets the last
// event ID unless it has a NUL, and retry sets the reconnection time when
// it has only ASCII digits. Other fields are ignored. A blank line sets
// the stream's last event ID even when it dispatches nothing; an event cut
// off by the end of the stream is never dispatched. Data is left as the
// server sent it, invalid UTF-8 included.
//
// Each event's end is its offset in the stream, just after the line end
// that dispatched it; a CRLF's LF counts as the start of what follows, so
// that an offset never depends on how the stream was split.
//
// # Limits
//
// A line longer than Limits.Line, or more than Limits.Event bytes between
// two boundaries, is an error wrapping ErrTooLong. A parser keeps only
// what the event needs: the data, type and id, not comments or unknown
// fields.
//
// # The first event
//
// ReadFirst reads a body up to its first event and returns the bytes it
// read with the event, so that a caller can look at the event (an error a
// server sends as the first event of a stream, with a success status) and
// still hand on the body whole.
//
// # Resuming a stream
//
// A Reader is the body of a stream that can be resumed. It gives its
// caller the bytes of its body up to the last boundary it has read, and
// holds back the rest. When the body ends, with an error or io.EOF, the
// Reader closes it and calls its Reconnect with the last event ID its
// caller has (the Last-Event-ID to send), the last retry value, and what
// it has delivered; a new body continues the stream, the part of an event
// held back is dropped, and the caller reads on. An error from Reconnect
// ends the stream with that error.
//
// A stream whose caller has no event ID is never resumed, since its
// server could only start it over: the body's error reaches the caller as
// it is. Progress tells what has been delivered, for an error that says
// how much of a stream its caller had.
package eventstream
