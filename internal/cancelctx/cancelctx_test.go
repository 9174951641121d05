package cancelctx

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var errCause = errors.New("the cause")

// parents are the two kinds of parent a Ctx takes: one that can never be
// cancelled, and one that can.
func parents() map[string]func() (context.Context, context.CancelFunc) {
	return map[string]func() (context.Context, context.CancelFunc){
		"never cancelled": func() (context.Context, context.CancelFunc) { return context.Background(), func() {} },
		"cancellable":     func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) },
	}
}

func TestCtxKeepsTheContract(t *testing.T) {
	require.NotNil(t, causeKey, "context.Cause's key was learnt")
	for name, parent := range parents() {
		t.Run(name, func(t *testing.T) {
			t.Run("cancelled after Done", func(t *testing.T) {
				p, stop := parent()
				defer stop()
				var c Ctx
				c.Init(p)
				done := c.Done()
				assert.Equal(t, done, c.Done(), "successive calls return the same channel")
				require.NoError(t, c.Err())
				c.Cancel(errCause)
				c.Cancel(errors.New("a second cause"))
				<-done
				assert.ErrorIs(t, c.Err(), context.Canceled)
				assert.ErrorIs(t, context.Cause(&c), errCause, "the first cause stays")
				c.Release()
			})
			t.Run("cancelled before anyone waited", func(t *testing.T) {
				p, stop := parent()
				defer stop()
				var c Ctx
				c.Init(p)
				c.Cancel(errCause)
				assert.ErrorIs(t, c.Err(), context.Canceled)
				select {
				case <-c.Done():
				default:
					t.Fatal("Done is not closed after the Ctx was cancelled")
				}
				assert.ErrorIs(t, context.Cause(&c), errCause)
			})
			t.Run("a child made under it is cancelled with it", func(t *testing.T) {
				p, stop := parent()
				defer stop()
				var c Ctx
				c.Init(p)
				child, cancel := context.WithCancelCause(&c) // as net/http makes one
				defer cancel(nil)
				c.Cancel(errCause)
				<-child.Done()
				assert.ErrorIs(t, context.Cause(child), errCause)
			})
			t.Run("settled", func(t *testing.T) {
				p, stop := parent()
				defer stop()
				var c Ctx
				c.Init(p)
				assert.False(t, c.Settle(), "nothing made: nothing to release")
				c.Cancel(errCause)
				assert.NoError(t, c.Err(), "a settled Ctx is not cancelled")
				assert.Equal(t, p.Done(), c.Done(), "its parent's channel")
			})
		})
	}
	t.Run("cancelled with its parent", func(t *testing.T) {
		p, stop := context.WithCancel(context.Background())
		var c Ctx
		c.Init(p)
		done := c.Done()
		stop()
		<-done
		assert.ErrorIs(t, c.Err(), context.Canceled)
	})
	t.Run("made under a cancellable parent, it is released", func(t *testing.T) {
		p, stop := context.WithCancel(context.Background())
		defer stop()
		var c Ctx
		c.Init(p)
		c.Done()
		assert.True(t, c.Settle(), "held by its parent until released")
		c.Release()
		assert.ErrorIs(t, c.Err(), context.Canceled)
	})
	t.Run("its parent's deadline and values", func(t *testing.T) {
		type key struct{}
		at := time.Now().Add(time.Hour)
		p, stop := context.WithDeadline(context.WithValue(context.Background(), key{}, "v"), at)
		defer stop()
		var c Ctx
		c.Init(p)
		d, ok := c.Deadline()
		assert.True(t, ok)
		assert.Equal(t, at, d)
		assert.Equal(t, "v", c.Value(key{}))
	})
}

// TestCtxOverANeverCancelledParentCostsAChannel: waited on, a Ctx over a
// parent that can never be cancelled allocates its channel only.
func TestCtxOverANeverCancelledParentCostsAChannel(t *testing.T) {
	cs := make([]Ctx, 200)
	i := 0
	allocs := testing.AllocsPerRun(100, func() {
		c := &cs[i]
		i++
		c.Init(context.Background())
		<-c.doneOrClosed()
	})
	assert.Equal(t, 1.0, allocs)
}

// doneOrClosed asks for c's channel, cancelling c so that it can be read.
func (c *Ctx) doneOrClosed() <-chan struct{} {
	d := c.Done()
	c.Cancel(nil)
	return d
}

// TestDerivedContextsNeedNoGoroutine proves that a context derived from a
// Ctx, as net/http's Transport derives one for each request, is tied to it
// without a goroutine of its own, over either kind of parent, and ends as
// it is cancelled, with its cause; one derived once it is cancelled ends at
// once; and context.AfterFunc's functions run once it is.
func TestDerivedContextsNeedNoGoroutine(t *testing.T) {
	for name, parent := range parents() {
		t.Run(name, func(t *testing.T) {
			p, cancelParent := parent()
			defer cancelParent()
			var c Ctx
			c.Init(p)
			before := runtime.NumGoroutine()
			var derived []context.Context
			for range 100 {
				d, cancel := context.WithCancelCause(&c)
				defer cancel(nil)
				derived = append(derived, d)
			}
			assert.Equal(t, before, runtime.NumGoroutine(), "goroutines started by 100 derived contexts")
			ran := make(chan struct{})
			context.AfterFunc(&c, func() { close(ran) })

			c.Cancel(errCause)
			for _, d := range derived {
				<-d.Done()
				assert.ErrorIs(t, context.Cause(d), errCause)
			}
			<-ran
			late, cancel := context.WithCancel(&c)
			defer cancel()
			<-late.Done()
		})
	}
}

// TestAfterFuncOnceCancelledRunsApart proves that a function given to
// AfterFunc once the Ctx is cancelled runs on a goroutine of its own: the
// context package gives it holding the lock of the context it derives,
// which the function takes, so that running it at once would deadlock; and
// that contexts derived as the Ctx is cancelled, on another goroutine, all
// end.
func TestAfterFuncOnceCancelledRunsApart(t *testing.T) {
	var c Ctx
	c.Init(context.Background())
	_ = c.Done()
	c.Cancel(errCause)
	var mu sync.Mutex
	ran := make(chan struct{})
	mu.Lock()
	c.AfterFunc(func() {
		mu.Lock()
		defer mu.Unlock()
		close(ran)
	})
	mu.Unlock()
	<-ran

	for range 2000 {
		var c Ctx
		c.Init(context.Background())
		go c.Cancel(errCause)
		d, cancel := context.WithCancelCause(&c)
		<-d.Done()
		cancel(nil)
	}
}
