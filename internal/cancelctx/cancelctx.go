// Package cancelctx gives an attempt a context that it can cancel, with a
// cause, for what it costs only when something needs it. A Ctx lives in a
// struct of its owner's, so that it costs no allocation of its own; it
// makes its Done channel only when something asks for it, or when it is
// cancelled after being asked: a channel of its own over a parent that can
// never be cancelled (its Done is nil), and context.WithCancelCause's over
// one that can, which then holds it until it is cancelled or released. A
// Ctx that nothing waited on is only marked cancelled.
//
// It is what net/http's Transport is given as the context of an attempt
// that must be cancellable by retryhttp (a guarded attempt, the first
// attempt of a hedged request), and it keeps context.Context's contract:
// its Done channel is closed once it is cancelled, successive calls return
// the same channel, Err reports context.Canceled once it is, and
// context.Cause reports the cause it was cancelled with.
package cancelctx

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// A Ctx is a context derived from a parent that its owner can cancel. The
// zero Ctx is not ready: Init it.
type Ctx struct {
	parent context.Context
	// inner and cancelInner are context.WithCancelCause's of the parent,
	// when it can be cancelled; done is the channel of a Ctx over one that
	// cannot. They are set once, under mu, before made is.
	inner       context.Context
	cancelInner context.CancelCauseFunc
	done        chan struct{}
	made        atomic.Bool
	cancelled   atomic.Bool // cancelled before inner was made, or without one
	mu          sync.Mutex
	cause       error // the first cause, when cancelled without inner
	settled     bool  // nothing will cancel it any more
	expired     bool  // cancelled without inner as the followed parent's deadline passed
	// after runs what AfterFunc was given, over a parent that cannot be
	// cancelled, as c is cancelled.
	after func()
}

// Init readies c as a context derived from parent.
func (c *Ctx) Init(parent context.Context) { c.parent = parent }

// Deadline returns the parent's deadline.
func (c *Ctx) Deadline() (time.Time, bool) { return c.parent.Deadline() }

// Done returns the channel closed once c is cancelled, or its parent is;
// once c is settled and nothing asked for one before, the parent's.
func (c *Ctx) Done() <-chan struct{} {
	if !c.made.Load() {
		c.mu.Lock()
		if !c.made.Load() {
			if c.settled && !c.cancelled.Load() {
				c.mu.Unlock()
				return c.parent.Done()
			}
			c.make()
		}
		c.mu.Unlock()
	}
	if c.inner != nil {
		return c.inner.Done()
	}
	return c.done
}

// make makes c's Done channel, closed at once if c was cancelled; c.mu is
// held.
func (c *Ctx) make() {
	if c.parent.Done() == nil {
		c.done = make(chan struct{})
		if c.cancelled.Load() {
			close(c.done)
		}
	} else {
		c.inner, c.cancelInner = context.WithCancelCause(c.parent)
		if c.cancelled.Load() {
			c.cancelInner(c.cause)
		}
	}
	c.made.Store(true)
}

// Err returns context.Canceled once c is cancelled, or its parent's error.
func (c *Ctx) Err() error {
	if c.made.Load() && c.inner != nil {
		return c.inner.Err()
	}
	if c.cancelled.Load() {
		if c.expired {
			return context.DeadlineExceeded
		}
		return context.Canceled
	}
	return c.parent.Err()
}

// Value returns the parent's value for key; for the key by which
// context.Cause finds a cause, once c is cancelled, one that reports c's.
func (c *Ctx) Value(key any) any {
	if c.made.Load() && c.inner != nil {
		return c.inner.Value(key)
	}
	if key == causeKey && causeKey != nil && c.cancelled.Load() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.cause == nil || c.cause == context.Canceled {
			return nil // context.Cause falls back on Err
		}
		// A context that answers context.Cause with c's cause, made only
		// when asked, once c is cancelled.
		cc, cancel := context.WithCancelCause(context.Background())
		cancel(c.cause)
		return cc.Value(key)
	}
	return c.parent.Value(key)
}

// Cancel cancels c with cause, unless it is settled and nothing asked for
// its Done channel; like a CancelCauseFunc, it may be called more than
// once, and the first cause stays.
func (c *Ctx) Cancel(cause error) { c.cancel(context.Canceled, cause) }

// cancel cancels c with err, context.Canceled or context.DeadlineExceeded,
// which Err reports unless c is under a context.WithCancelCause's, and
// cause.
func (c *Ctx) cancel(err, cause error) {
	if cause == nil {
		cause = err
	}
	c.mu.Lock()
	if c.made.Load() && c.inner != nil {
		c.mu.Unlock()
		c.cancelInner(cause)
		return
	}
	if c.cancelled.Load() || c.settled && !c.made.Load() {
		c.mu.Unlock()
		return
	}
	c.cause, c.expired = cause, err == context.DeadlineExceeded
	c.cancelled.Store(true)
	if c.made.Load() {
		close(c.done)
	}
	after := c.after
	c.after = nil
	c.mu.Unlock()
	if after != nil {
		after()
	}
}

// AfterFunc arranges for f to run once c is cancelled, so that a context
// derived from c (the one net/http's Transport derives for each request)
// is tied to it as to a context of the context package, where it would
// otherwise need a goroutine of its own to wait on c's Done channel. f runs
// on the goroutine that cancels c, once c's lock is released: the context
// package gives only functions that never block (a derived context's
// cancel; context.AfterFunc's, which starts a goroutine for its own). Given
// once c is cancelled, f runs on a goroutine of its own: the context
// package calls AfterFunc holding the lock of the context it derives,
// which f takes. Under
// a context.WithCancelCause's, it is that context's AfterFunc. Its stop
// never stops f, which finds its context ended already when c is cancelled
// after it: the context package's uses of stop need no more, and keeping f
// costs no allocation.
func (c *Ctx) AfterFunc(f func()) (stop func() bool) {
	c.mu.Lock()
	if c.made.Load() && c.inner != nil {
		c.mu.Unlock()
		return context.AfterFunc(c.inner, f)
	}
	switch prev := c.after; {
	case c.cancelled.Load():
		// Its caller may hold a lock f takes (propagateCancel holds the
		// derived context's): f runs on a goroutine of its own.
		c.mu.Unlock()
		go f()
		return keep
	case prev == nil:
		c.after = f
	default:
		c.after = func() { prev(); f() }
	}
	c.mu.Unlock()
	return keep
}

// keep is the stop of AfterFunc.
func keep() bool { return false }

// Settle marks c as never to be cancelled from now on, and reports whether
// it must still be released (Release) once its attempt is done with: when
// context.WithCancelCause's holds it under its parent.
func (c *Ctx) Settle() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.settled = true
	return c.made.Load() && c.inner != nil
}

// Release releases what c holds under its parent, cancelling it. Like a
// CancelFunc, it may be called more than once.
func (c *Ctx) Release() {
	if c.made.Load() && c.inner != nil {
		c.cancelInner(context.Canceled)
	}
}

// causeKey is the key by which context.Cause asks a context for the
// cancellation that holds its cause, learnt by asking context.Cause for
// the cause of a context that records the key it is asked for. It is nil
// if context.Cause is found to ask some other way; a Ctx cancelled without
// a context.WithCancelCause then reports context.Canceled as its cause.
var causeKey any

func init() {
	probe := &keyProbe{Context: context.Background()}
	_ = context.Cause(probe)
	causeKey = probe.key
}

// keyProbe is a context, cancelled, that records the first key it is
// asked for.
type keyProbe struct {
	context.Context
	key any
}

func (p *keyProbe) Err() error { return context.Canceled }

func (p *keyProbe) Value(key any) any {
	if p.key == nil {
		p.key = key
	}
	return nil
}

// Follow readies c, a zero Ctx, as a context that follows parent's
// cancellation, reporting parent's error and cause, until stop is called:
// then only Cancel ends it. It is over Detach(parent): its Done channel is
// its own.
func (c *Ctx) Follow(parent context.Context) (stop func() bool) {
	c.Init(Detach(parent))
	return context.AfterFunc(parent, func() { c.cancel(parent.Err(), context.Cause(parent)) })
}

// Detach returns parent without its cancellation: its values and its
// deadline, never done, as context.WithoutCancel's but for the deadline,
// which a base may read to tell the server. An attempt under it follows the
// caller's cancellation only as its owner passes it on (context.AfterFunc),
// so that the owner can leave it to answer once the caller is gone.
func Detach(parent context.Context) context.Context {
	return detached{Context: context.WithoutCancel(parent), parent: parent}
}

type detached struct {
	context.Context // context.WithoutCancel(parent): its values, never done
	parent          context.Context
}

func (d detached) Deadline() (time.Time, bool) { return d.parent.Deadline() }
