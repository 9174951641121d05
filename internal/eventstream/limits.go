package eventstream

import "errors"

// ErrTooLong is the error, tested with errors.Is, of a stream with a line
// or an event longer than its Limits.
var ErrTooLong = errors.New("eventstream: too long")

// Limits bound the memory a stream may take. A field of zero or less takes
// its default.
type Limits struct {
	// Line is the most bytes a line may have, not counting its end.
	// The default is 256 KiB.
	Line int
	// Event is the most bytes from one boundary to the next, line ends
	// and comments included. The default is 1 MiB.
	Event int
}

// resolved returns l with its defaults in place of zeros.
func (l Limits) resolved() Limits {
	if l.Line <= 0 {
		l.Line = 256 << 10
	}
	if l.Event <= 0 {
		l.Event = 1 << 20
	}
	return l
}
