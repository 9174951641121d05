package eventstream

import (
	"bytes"
	"fmt"
	"time"
)

// An Event is a dispatched event.
type Event struct {
	// Type is the value of the event's last event field, or "message".
	Type string
	// Data is the values of its data fields joined by LF. It is valid
	// until the next call of Next, and may share the memory of the bytes
	// given to Next, which must not change while it is used.
	Data []byte
	// ID is the stream's last event ID when the event was dispatched: the
	// value of the latest id field, in this event or an earlier one.
	ID string
	// End is the offset in the stream just after the line end that
	// dispatched the event.
	End int64
}

// A Step is what a call of Parser.Next stopped at.
type Step uint8

const (
	// More means that the bytes given ran out before a boundary.
	More Step = iota
	// Dispatch means that a blank line dispatched an event.
	Dispatch
	// Boundary means a boundary that dispatches nothing: a blank line
	// ending a block with no data field, or a comment line outside any
	// block.
	Boundary
)

// bom is the UTF-8 byte order mark a stream may start with.
const bom = "\xEF\xBB\xBF"

// A Parser parses an event stream incrementally: the bytes of a stream,
// given to Next in pieces of any size, yield the same events, at the same
// offsets, however the stream is split. The zero Parser has the default
// Limits.
type Parser struct {
	lim         Limits // resolved on first use
	discardData bool   // data values are not kept: Event.Data is nil

	off     int64 // bytes consumed
	seg     int   // bytes consumed since the last boundary
	bomSeen int   // bytes of the byte order mark matched so far
	started bool  // the stream is past its byte order mark
	cr      bool  // the last byte was a CR: an LF next is part of its line end
	crEnd   bool  // the last boundary ended in a CR
	pending bool  // a field line since the last boundary

	// A line begun but not ended: its length, what is kept of it, and,
	// once its field is known, whether it is kept whole or skipped, and
	// then which field it is.
	lineLen  int
	line     []byte
	keeping  bool
	skipping bool
	skipped  field

	typ      []byte // event type buffer
	data     []byte // data buffer, without its last LF
	hasData  bool   // the data buffer is not empty
	dataRef  []byte // the data buffer while it is one value in Next's b
	refd     bool   // dataRef, not data, is the data buffer
	id       string // last event ID buffer
	lastID   string // last event ID, as of the last blank line
	lastType string // the last event type dispatched, reused to spare a copy
	retry    time.Duration
	hasRetry bool

	ev  Event
	err error
}

// NewParser returns a Parser with the limits given.
func NewParser(lim Limits) *Parser {
	return &Parser{lim: lim.resolved()}
}

// Offset returns the number of bytes of the stream Next has consumed.
func (p *Parser) Offset() int64 { return p.off }

// LastID returns the stream's last event ID as of its last blank line:
// what a reconnection sends as Last-Event-ID. It is set by blank lines
// whether or not they dispatch an event.
func (p *Parser) LastID() string { return p.lastID }

// Retry returns the reconnection time of the last valid retry field, and
// whether there was one. A value too large for a Duration saturates.
func (p *Parser) Retry() (time.Duration, bool) { return p.retry, p.hasRetry }

// Event returns the event of the last Next that returned Dispatch.
func (p *Parser) Event() Event { return p.ev }

// Next parses b, the bytes of the stream that follow those given before,
// up to and including its first boundary, and returns how many bytes of b
// it consumed and the boundary it stopped at: Dispatch, Boundary, or More
// when b ran out (then n is len(b)). A line or an event longer than its
// limit is an error wrapping ErrTooLong; once Next has returned an error
// it returns it again.
func (p *Parser) Next(b []byte) (n int, s Step, err error) {
	if p.err != nil {
		return 0, More, p.err
	}
	if p.lim.Line == 0 {
		p.lim = p.lim.resolved()
	}
	for n < len(b) && s == More && p.err == nil {
		switch {
		case !p.started:
			n += p.skipBOM(b[n:])
		case p.cr:
			p.cr = false
			if b[n] == '\n' && p.consume(1) {
				n++
			}
		default:
			var k int
			k, s = p.line1(b[n:])
			n += k
		}
	}
	if s == More {
		p.ownData() // b may change before the next call
	}
	return n, s, p.err
}

// skipBOM consumes what b has of the byte order mark, and returns how
// many bytes of b it took. On the first byte that departs from the mark,
// the bytes matched so far become the start of the first line.
func (p *Parser) skipBOM(b []byte) int {
	for i, c := range b {
		if c != bom[p.bomSeen] {
			p.started = true
			if p.bomSeen > 0 {
				p.partial([]byte(bom[:p.bomSeen]), false) // a failure is in p.err
			}
			return i
		}
		if !p.consume(1) {
			return i
		}
		p.bomSeen++
		if p.bomSeen == len(bom) {
			p.started = true
			return i + 1
		}
	}
	return len(b)
}

// line1 consumes b up to the end of its first line, or all of b if it
// has none, and returns how many bytes it took and what the line did.
func (p *Parser) line1(b []byte) (int, Step) {
	i := lineEnd(b)
	if i < 0 {
		if !p.partial(b, true) {
			return 0, More
		}
		return len(b), More
	}
	if p.lineLen+i > p.lim.Line {
		p.fail("line", p.lim.Line)
		return 0, More
	}
	if !p.consume(i + 1) {
		return 0, More
	}
	p.cr = b[i] == '\r'
	var s Step
	switch {
	case p.skipping:
		s = p.field(p.skipped, nil)
	case p.lineLen > 0:
		p.line = append(p.line, b[:i]...)
		s = p.process(p.line, false)
	default:
		s = p.process(b[:i], true)
	}
	p.lineLen, p.line, p.keeping, p.skipping = 0, p.line[:0], false, false
	return i + 1, s
}

// lineEnd returns the index of the first CR or LF in b, or -1.
func lineEnd(b []byte) int {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		i = len(b)
	}
	if j := bytes.IndexByte(b[:i], '\r'); j >= 0 {
		return j
	}
	if i == len(b) {
		return -1
	}
	return i
}

// partial adds b, bytes of a line not yet ended, to the line; count says
// whether they are still to be consumed. It keeps only what the line's
// field needs, and reports whether the line is within its limits.
func (p *Parser) partial(b []byte, count bool) bool {
	if p.lineLen+len(b) > p.lim.Line {
		p.fail("line", p.lim.Line)
		return false
	}
	if count && !p.consume(len(b)) {
		return false
	}
	p.lineLen += len(b)
	if p.skipping {
		return true
	}
	p.line = append(p.line, b...)
	if p.keeping {
		return true
	}
	switch f, known := fieldOfPartial(p.line); {
	case !known:
	case f == fieldOther || f == fieldComment || (f == fieldData && p.discardData):
		p.skipping, p.skipped, p.line = true, f, p.line[:0]
	default:
		p.keeping = true
	}
	return true
}

// consume counts k more bytes of the stream, and reports whether they
// keep the event within its limit.
func (p *Parser) consume(k int) bool {
	if k > p.lim.Event-p.seg {
		p.fail("event", p.lim.Event)
		return false
	}
	p.seg += k
	p.off += int64(k)
	return true
}

// fail makes the error of a line or an event over its limit.
func (p *Parser) fail(what string, limit int) {
	p.err = fmt.Errorf("%w: %s of more than %d bytes at offset %d", ErrTooLong, what, limit, p.off)
}

// process interprets a whole line, without its end; inB says whether it
// lies in the bytes given to Next, rather than in the parser's own.
func (p *Parser) process(line []byte, inB bool) Step {
	if len(line) == 0 {
		return p.dispatch()
	}
	if line[0] == ':' {
		return p.field(fieldComment, nil)
	}
	name, value := line, []byte(nil)
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		name, value = line[:i], line[i+1:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
	}
	return p.fieldIn(fieldOf(name), value, inB)
}

// field applies a field line's value, which belongs to the parser.
func (p *Parser) field(f field, value []byte) Step {
	return p.fieldIn(f, value, false)
}

// fieldIn applies a field line's value; inB says whether it lies in the
// bytes given to Next.
func (p *Parser) fieldIn(f field, value []byte, inB bool) Step {
	switch f {
	case fieldComment:
		if p.pending {
			return More
		}
		return p.boundary(Boundary)
	case fieldEvent:
		p.typ = append(p.typ[:0], value...)
	case fieldData:
		switch {
		case p.discardData:
		case !p.hasData && inB:
			p.dataRef, p.refd = value, true // copied only if it must be
		default:
			p.ownData()
			if p.hasData {
				p.data = append(p.data, '\n')
			}
			p.data = append(p.data, value...)
		}
		p.hasData = true
	case fieldID:
		if bytes.IndexByte(value, 0) < 0 && string(value) != p.id {
			p.id = string(value)
		}
	case fieldRetry:
		if d, ok := parseRetry(value); ok {
			p.retry, p.hasRetry = d, true
		}
	}
	p.pending = true
	return More
}

// dispatch ends a block at a blank line.
func (p *Parser) dispatch() Step {
	p.lastID = p.id
	if !p.hasData {
		return p.boundary(Boundary)
	}
	typ := "message"
	if len(p.typ) > 0 && string(p.typ) != typ {
		if string(p.typ) != p.lastType {
			p.lastType = string(p.typ)
		}
		typ = p.lastType
	}
	p.ev = Event{Type: typ, Data: p.data, ID: p.lastID, End: p.off}
	switch {
	case p.discardData:
		p.ev.Data = nil
	case p.refd:
		p.ev.Data = p.dataRef
	}
	return p.boundary(Dispatch)
}

// ownData copies into the parser's own buffer a data buffer that lies in
// the bytes given to Next.
func (p *Parser) ownData() {
	if p.refd {
		p.data = append(p.data[:0], p.dataRef...)
		p.dataRef, p.refd = nil, false
	}
}

// boundary resets the block's state at a boundary.
func (p *Parser) boundary(s Step) Step {
	p.seg, p.pending, p.crEnd = 0, false, p.cr
	p.typ, p.data, p.hasData = p.typ[:0], p.data[:0], false
	p.dataRef, p.refd = nil, false
	return s
}

// restart puts the parser back in the state of its last boundary, for a
// stream that continues after it with other bytes: the block begun since
// is discarded, and the last event ID is that of the boundary.
func (p *Parser) restart() {
	p.seg, p.pending, p.cr = 0, false, p.crEnd
	p.typ, p.data, p.hasData = p.typ[:0], p.data[:0], false
	p.dataRef, p.refd = nil, false
	p.lineLen, p.line, p.keeping, p.skipping = 0, p.line[:0], false, false
	p.id = p.lastID
}
