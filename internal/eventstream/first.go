package eventstream

import (
	"fmt"
	"io"
)

// firstBuffer is the size of ReadFirst's first read: enough for the first
// event of most streams, small enough to read little past it.
const firstBuffer = 512

// ReadFirst reads r until its first dispatched event and returns every
// byte it read, in order, so that the caller can put back a body that
// yields them and then the rest of r.
//
// It returns ok and the event when it found one; Event.Data may share
// raw's memory. It stops at the first event; at an error from r, io.EOF
// included; or at a limit, with an error wrapping ErrTooLong: a line or an
// event over its limit, or more than lim.Event bytes without an event.
// When the Read that completed the event also returned an error, both ok
// and err are set. It reads no more than the Read that completes the
// event gives, and holds at most lim.Event+1 bytes.
func ReadFirst(r io.Reader, lim Limits) (raw []byte, ev Event, ok bool, err error) {
	lim = lim.resolved()
	p := Parser{lim: lim}
	most := lim.Event + 1 // one byte past the bound, to see it crossed
	raw = make([]byte, 0, min(firstBuffer, most))
	for empty := 0; ; {
		if len(raw) == cap(raw) {
			grown := make([]byte, len(raw), min(2*cap(raw), most))
			copy(grown, raw)
			raw = grown
		}
		n, rerr := r.Read(raw[len(raw):cap(raw)])
		chunk := raw[len(raw) : len(raw)+n]
		raw = raw[:len(raw)+n]
		for len(chunk) > 0 {
			k, s, perr := p.Next(chunk)
			if perr != nil {
				return raw, Event{}, false, perr
			}
			if s == Dispatch {
				return raw, p.Event(), true, rerr
			}
			chunk = chunk[k:]
		}
		switch {
		case rerr != nil:
			return raw, Event{}, false, rerr
		case len(raw) > lim.Event:
			return raw, Event{}, false, fmt.Errorf("%w: no event in the first %d bytes", ErrTooLong, lim.Event)
		case n == 0:
			if empty++; empty >= 100 {
				return raw, Event{}, false, io.ErrNoProgress
			}
		default:
			empty = 0
		}
	}
}
