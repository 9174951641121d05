package attempt

import (
	"io"
	"sync"
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
