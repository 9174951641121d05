package classify

import (
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/retryhttp/retryhttp/internal/wire"
)

// peekWait bounds how long Peek waits for the bytes of one response, in
// all, however many classifiers ask: the bound the Transport puts on
// draining a discarded response.
const peekWait = 100 * time.Millisecond

// Peek returns the first bytes of resp's body, at most 8 KiB, without
// taking them from whoever reads the body next: the body is replaced by one
// that gives the same bytes, the peeked ones first and then the rest as the
// original body delivers them, errors included, and closes the original on
// Close. It is how a Classifier reads an error document, and the only way a
// Classifier may touch resp.Body: the caller still gets the body byte for
// byte, and the Transport can still drain and close it.
//
// complete reports whether the bytes are the whole body. They are not when
// the body is longer than 8 KiB, when reading it failed, or when it
// stalled; nor, for want of a byte past the limit to tell, when the body is
// exactly 8 KiB long and its ContentLength does not say so. Peek waits at most 100 ms for a response's bytes (in all,
// however many times it is called for that response), then returns those
// that arrived. A classifier that finds no answer in an incomplete prefix
// should abstain. Bytes that arrive later still reach the reader of
// the body, in order.
//
// Calling Peek again for the same response returns the same bytes
// without reading more. It reads nothing when the body is nil or
// http.NoBody. ContentLength is used only to size the read: a response made
// by hand often leaves it 0 although it has a body. It is safe to call from a Classifier, which the Transport
// calls on the goroutine making the request; it is not safe for concurrent
// use with reads of the body.
func Peek(resp *http.Response) (prefix []byte, complete bool) {
	if resp == nil || resp.Body == nil || resp.Body == http.NoBody {
		return nil, true
	}
	p, ok := resp.Body.(*peekedBody)
	if !ok {
		p = newPeekedBody(resp.Body, resp.ContentLength)
		resp.Body = p
	}
	return p.prefix()
}

// A peekedBody is a response body whose first bytes a goroutine of its own
// reads ahead, so that the wait for them can be bounded, and that gives
// them to its reader before the rest.
type peekedBody struct {
	src      io.ReadCloser
	deadline time.Time     // when waiting for the prefix ends
	done     chan struct{} // closed once the goroutine has stopped reading

	mu  sync.Mutex // guards buf while the goroutine appends to it
	buf []byte     // the peeked bytes; capacity fixed, so earlier views stay valid

	// Set by the goroutine before done is closed.
	err  error // what ended the read ahead: io.EOF, a failure, or nil at the limit
	full bool  // the declared length was read

	off       int // bytes of buf the reader has had; reader only
	closeOnce sync.Once
	closeErr  error
}

func newPeekedBody(src io.ReadCloser, length int64) *peekedBody {
	n := int64(wire.PeekLimit)
	if length > 0 && length < n {
		n = length
	}
	p := &peekedBody{
		src:      src,
		deadline: time.Now().Add(peekWait),
		done:     make(chan struct{}),
		buf:      make([]byte, 0, n),
	}
	go p.readAhead(length)
	return p
}

// readAhead fills buf from src until it is full, src ends, or src fails. It
// reads into buf's spare capacity, which no view handed out covers.
func (p *peekedBody) readAhead(length int64) {
	defer close(p.done)
	for {
		p.mu.Lock()
		b := p.buf
		p.mu.Unlock()
		if len(b) == cap(b) {
			p.full = length > 0 && int64(len(b)) == length
			return
		}
		n, err := p.src.Read(b[len(b):cap(b)])
		p.mu.Lock()
		p.buf = b[:len(b)+n]
		p.mu.Unlock()
		if err != nil {
			p.err = err
			return
		}
	}
}

// prefix waits, until the deadline, for the read ahead to stop, and returns
// the bytes read by then.
func (p *peekedBody) prefix() ([]byte, bool) {
	select {
	case <-p.done:
	default:
		if wait := time.Until(p.deadline); wait > 0 {
			timer := time.NewTimer(wait)
			select {
			case <-p.done:
			case <-timer.C:
			}
			timer.Stop()
		}
	}
	select {
	case <-p.done:
		return p.buf[:len(p.buf):len(p.buf)], p.err == io.EOF || p.full
	default:
		// The read ahead goes on past these bytes, never over them.
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.buf[:len(p.buf):len(p.buf)], false
	}
}

// Read gives the peeked bytes, then what ended the read ahead if it was an
// error or the end, then the rest of src. It waits for the read ahead to
// stop first, as a read of a body that stalls waits.
func (p *peekedBody) Read(b []byte) (int, error) {
	<-p.done
	if p.off < len(p.buf) {
		n := copy(b, p.buf[p.off:])
		p.off += n
		return n, nil
	}
	if p.err != nil {
		return 0, p.err
	}
	return p.src.Read(b)
}

// Close closes the original body, which also ends a read ahead that is
// still waiting for bytes.
func (p *peekedBody) Close() error {
	p.closeOnce.Do(func() { p.closeErr = p.src.Close() })
	return p.closeErr
}
