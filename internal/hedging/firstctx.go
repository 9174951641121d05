package hedging

import (
	"context"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// firstCtx is the context of a hedged request's first attempt: the
// caller's context, which a winning hedge can cancel. It is a
// context.WithCancel of the caller's, made only once something asks for its
// Done channel or it must be cancelled, so that a first attempt answered
// before the delay over a base that never asks allocates nothing for it.
// Once the attempt has returned without a hedge it is settled: nothing
// will cancel it, and it is the caller's context.
type firstCtx struct {
	parent context.Context
	// inner and cancelInner are set once, under mu, before made is.
	inner       context.Context
	cancelInner context.CancelFunc
	made        atomic.Bool
	mu          sync.Mutex
	settled     bool
}

func (c *firstCtx) Deadline() (time.Time, bool) { return c.parent.Deadline() }

func (c *firstCtx) Done() <-chan struct{} {
	if c.made.Load() {
		return c.inner.Done()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.made.Load() {
		if c.settled {
			return c.parent.Done()
		}
		c.makeInner()
	}
	return c.inner.Done()
}

func (c *firstCtx) Err() error {
	if c.made.Load() {
		return c.inner.Err()
	}
	return c.parent.Err()
}

func (c *firstCtx) Value(key any) any {
	if c.made.Load() {
		return c.inner.Value(key)
	}
	return c.parent.Value(key)
}

// makeInner makes the cancellable context; c.mu is held.
func (c *firstCtx) makeInner() {
	c.inner, c.cancelInner = context.WithCancel(c.parent)
	c.made.Store(true)
}

// cancel ends the attempt, unless it is settled.
func (c *firstCtx) cancel() {
	c.mu.Lock()
	if !c.made.Load() {
		if c.settled {
			c.mu.Unlock()
			return
		}
		c.makeInner()
	}
	c.mu.Unlock()
	c.cancelInner()
}

// settle marks the attempt as never to be cancelled, and reports whether
// its context must be released (by release) once its response is done
// with: when it was made under a parent that can be cancelled, which holds
// it until then.
func (c *firstCtx) settle() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.settled = true
	return c.made.Load() && c.parent.Done() != nil
}

// release releases the context made by the attempt. Like a CancelFunc, it
// may be called more than once.
func (c *firstCtx) release() {
	if c.made.Load() {
		c.cancelInner()
	}
}

// firstBody releases the first attempt's context when the caller closes
// its response body. It lives in the hedgeCall, to save an allocation.
type firstBody struct {
	io.ReadCloser
	ctx *firstCtx
}

func (b *firstBody) Close() error {
	err := b.ReadCloser.Close()
	b.ctx.release()
	return err
}
