package attempt

import (
	"io"
	"net/http"
	"sync"
	"time"
)

// cancelBody releases an attempt's context when the caller closes the
// response body.
type cancelBody struct {
	io.ReadCloser
	cancel func()
	once   sync.Once
}

func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.cancel)
	return err
}

// cancelWriteBody keeps the body of a 101 Switching Protocols response an
// io.ReadWriteCloser, as net/http promises.
type cancelWriteBody struct {
	*cancelBody
	io.Writer
}

// CancelBody returns rc, made to call cancel, once, when it is closed: an
// attempt's context is released when the caller closes the response body.
// The body of a 101 Switching Protocols response stays an
// io.ReadWriteCloser, as net/http promises.
func CancelBody(rc io.ReadCloser, cancel func()) io.ReadCloser {
	b := &cancelBody{ReadCloser: rc, cancel: cancel}
	if w, ok := rc.(io.Writer); ok {
		return cancelWriteBody{cancelBody: b, Writer: w}
	}
	return b
}

// Discard drains a little of a response that will not be returned, so its
// connection can be reused, and closes it.
func Discard(resp *http.Response) { DiscardBody(resp.Body) }

// DiscardBody drains a little of a response body that will not be
// returned, and closes it. A body that stalls is closed after
// DrainTimeout, which ends a blocked read in net/http's bodies.
func DiscardBody(body io.ReadCloser) {
	stop := time.AfterFunc(DrainTimeout, func() { body.Close() })
	_, _ = io.CopyN(io.Discard, body, drainLimit)
	if stop.Stop() {
		body.Close()
	}
}

// drainLimit bounds how much of a discarded response body is read so that
// its connection can be reused, and DrainTimeout how long that may take. A
// longer or slower body is closed unread, which costs that connection but
// never unbounded reading or waiting.
const (
	drainLimit   = 4 << 10
	DrainTimeout = 100 * time.Millisecond
)
