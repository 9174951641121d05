package retryhttp

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"sync"
)

// A replay produces the request body for each attempt of one request.
//
// The caller's body is closed exactly once: by the base transport when it is
// handed over (first attempt with GetBody, or a body too long to buffer), or
// here once it has been read into the buffer.
type replay struct {
	kind replayKind
	// getBody makes a fresh body for each retry (kindGetBody).
	getBody func() (io.ReadCloser, error)
	// buf holds the whole body (kindBuffered).
	buf []byte
	// first is the body of the first attempt when it differs from the
	// caller's (kindBuffered, kindStreamed).
	first io.ReadCloser
}

type replayKind uint8

const (
	kindNone     replayKind = iota // no body: every attempt sends none
	kindGetBody                    // the caller's GetBody makes each retry's body
	kindBuffered                   // the body was read into buf, whole
	kindStreamed                   // the body is longer than the buffer: it is sent once
	kindOnce                       // retries are off: the caller's body is passed through
)

// prepareReplay decides how the body of req, which has one, will be sent on
// each attempt, reading it into memory when that is the only way to send it
// twice. It closes the caller's body when it returns an error. A request
// without a body needs no replay: the zero replay sends none.
func prepareReplay(req *http.Request, limit int64, retries bool) (replay, error) {
	switch {
	case !retries:
		return replay{kind: kindOnce}, nil
	case req.GetBody != nil:
		return replay{kind: kindGetBody, getBody: req.GetBody}, nil
	}
	buf, err := readUpTo(req.Body, limit, req.ContentLength)
	if err != nil {
		req.Body.Close()
		return replay{}, err
	}
	if int64(len(buf)) > limit {
		// Too long to hold: send what was read, then the rest, once.
		return replay{kind: kindStreamed, first: &onceCloser{
			Reader: io.MultiReader(bytes.NewReader(buf), req.Body),
			closer: req.Body,
		}}, nil
	}
	req.Body.Close()
	return replay{kind: kindBuffered, buf: buf, first: bufferedBody(buf)}, nil
}

// replayable reports whether the body can be sent again.
func (r *replay) replayable() bool {
	return r.kind == kindNone || r.kind == kindGetBody || r.kind == kindBuffered
}

// modifies reports whether the first attempt must carry another body than
// the caller's request.
func (r *replay) modifies() bool {
	return r.kind == kindBuffered || r.kind == kindStreamed
}

// next returns the body for a retry. The caller must close it if the retry
// is abandoned before it is handed to the base transport.
func (r *replay) next() (io.ReadCloser, error) {
	switch r.kind {
	case kindNone:
		return nil, nil
	case kindGetBody:
		b, err := r.getBody()
		if err == nil && b == nil {
			err = errors.New("retryhttp: Request.GetBody returned a nil body")
		}
		return b, err
	case kindBuffered:
		return bufferedBody(r.buf), nil
	}
	return nil, errors.New("retryhttp: request body cannot be sent again")
}

func bufferedBody(buf []byte) io.ReadCloser {
	if len(buf) == 0 {
		return http.NoBody
	}
	b := &bytesBody{}
	b.Reset(buf)
	return b
}

// bytesBody is a request body read from memory.
type bytesBody struct{ bytes.Reader }

func (*bytesBody) Close() error { return nil }

// readUpTo reads r to its end, or until it has read more than limit bytes.
// hint, the declared length when positive, sizes the buffer so that a body
// of known length is read into one allocation.
func readUpTo(r io.Reader, limit, hint int64) ([]byte, error) {
	size := min(limit+1, 512)
	if hint > 0 {
		size = min(hint+1, limit+1)
	}
	buf := make([]byte, 0, size)
	for int64(len(buf)) <= limit {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)] // let append choose the growth
		}
		end := min(int64(cap(buf)), limit+1)
		n, err := r.Read(buf[len(buf):end])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
	return buf, nil
}

// setBody puts body on the attempt request a, a copy of the caller's req,
// keeping its length right and letting the base rewind a buffered body.
func (r *replay) setBody(a *http.Request, body io.ReadCloser) {
	switch r.kind {
	case kindNone:
		return
	case kindBuffered:
		a.Body = body
		if len(r.buf) == 0 {
			a.ContentLength = 0
		} else if a.ContentLength <= 0 {
			a.ContentLength = int64(len(r.buf))
		}
		buf := r.buf // not r: capturing r would move every replay to the heap
		a.GetBody = func() (io.ReadCloser, error) { return bufferedBody(buf), nil }
	default:
		a.Body = body
	}
}

// onceCloser closes its closer once, however often Close is called.
type onceCloser struct {
	io.Reader
	closer io.Closer
	once   sync.Once
	err    error
}

func (c *onceCloser) Close() error {
	c.once.Do(func() { c.err = c.closer.Close() })
	return c.err
}
