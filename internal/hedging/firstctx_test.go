package hedging

import (
	"context"
	"testing"

	"github.com/retryhttp/retryhttp/internal/cancelctx"
	"github.com/retryhttp/retryhttp/internal/testkit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFirstCtx checks that the first attempt's lazily made context behaves
// as a context.WithCancel of the caller's.
func TestFirstCtx(t *testing.T) {
	type key struct{}
	parentOf := func() (context.Context, context.CancelFunc) {
		return context.WithCancel(context.WithValue(t.Context(), key{}, "v"))
	}

	t.Run("cancelled before anything asked", func(t *testing.T) {
		parent, stop := parentOf()
		defer stop()
		c := firstOf(parent)
		assert.NoError(t, c.Err())
		assert.Equal(t, "v", c.Value(key{}))
		c.Cancel(context.Canceled)
		<-c.Done()
		assert.ErrorIs(t, c.Err(), context.Canceled)
		assert.ErrorIs(t, context.Cause(c), context.Canceled)
		assert.NoError(t, parent.Err(), "the caller's context lives on")
	})

	t.Run("cancelled while watched", func(t *testing.T) {
		parent, stop := parentOf()
		defer stop()
		c := firstOf(parent)
		done := c.Done()
		fired := make(chan int, 1)
		stopAfter := context.AfterFunc(c, func() { fired <- 1 })
		defer stopAfter()
		c.Cancel(context.Canceled)
		<-done
		assert.Equal(t, done, c.Done(), "the same channel every time")
		assert.ErrorIs(t, c.Err(), context.Canceled)
		testkit.Receive(t, fired)
	})

	t.Run("the caller's cancellation reaches it", func(t *testing.T) {
		parent, stop := parentOf()
		c := firstOf(parent)
		done := c.Done()
		stop()
		<-done
		assert.ErrorIs(t, c.Err(), context.Canceled)
	})

	t.Run("settled, it is the caller's", func(t *testing.T) {
		parent, stop := parentOf()
		defer stop()
		c := firstOf(parent)
		assert.False(t, c.Settle(), "nothing to release")
		c.Cancel(context.Canceled)
		assert.NoError(t, c.Err(), "a settled attempt is never cancelled")
		assert.Equal(t, parent.Done(), c.Done())
	})

	t.Run("settled after it was watched", func(t *testing.T) {
		parent, stop := parentOf()
		defer stop()
		c := firstOf(parent)
		done := c.Done()
		require.True(t, c.Settle(), "watched under a cancellable parent: it must be released")
		assert.Equal(t, done, c.Done())
		c.Release()
		<-done
		assert.NoError(t, parent.Err())
	})
}

// firstOf returns a first attempt's context under parent.
func firstOf(parent context.Context) *cancelctx.Ctx {
	c := &cancelctx.Ctx{}
	c.Init(parent)
	return c
}
