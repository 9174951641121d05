package stream

import (
	"net/http"

	"github.com/retryhttp/retryhttp/internal/streaming"
)

// An Event is the first event of an event stream, as the Transport held it
// for its classifiers.
type Event struct {
	// Type is the event's type: its event field, or "message".
	Type string
	// Data is its data fields' values, joined by line feeds. It must not
	// be modified.
	Data []byte
	// ID is the stream's last event ID as of the event; empty when none
	// was set.
	ID string
}

// First returns the first event of resp, a response whose body is an
// event stream, when a Transport WithStreams held the response for it; it
// reports false otherwise (another response, a stream that sent no event
// within the wait). It is for a Classifier: the Transport asks its
// classifiers of a response it held once it has the first event, and the
// event stays in the body for the caller to read.
func First(resp *http.Response) (Event, bool) {
	if resp == nil {
		return Event{}, false
	}
	h, ok := resp.Body.(*streaming.Held)
	if !ok {
		return Event{}, false
	}
	ev, ok := h.First()
	if !ok {
		return Event{}, false
	}
	return Event{Type: ev.Type, Data: ev.Data, ID: ev.ID}, true
}
