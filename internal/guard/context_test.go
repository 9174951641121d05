package guard

import (
	"context"
	"net/http/httptrace"
	"testing"
	"unsafe"

	"github.com/retryhttp/retryhttp/internal/attempt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGuardContext checks the guarded attempt's context: it carries the
// guard's trace without a context of its own, is cancelled with its parent
// and by the guard, and reads as cancelled once the attempt has ended, even
// if nothing had asked for its Done channel before.
func TestGuardContext(t *testing.T) {
	require.NotNil(t, traceKey, "httptrace's key was learnt: the guard's context carries its trace itself")

	t.Run("carries the trace", func(t *testing.T) {
		g, ctx := Start(context.Background(), Base{})
		defer g.End()
		assert.Same(t, g.ctx.trace(), httptrace.ContextClientTrace(ctx))
		assert.Equal(t, 1, attempt.Number(ctx), "no attempt number of its own")
	})
	t.Run("ended before anyone waited", func(t *testing.T) {
		g, ctx := Start(context.Background(), Base{})
		require.NoError(t, ctx.Err())
		g.End()
		assert.ErrorIs(t, ctx.Err(), context.Canceled)
		select {
		case <-ctx.Done():
		default:
			t.Fatal("Done is not closed after the attempt ended")
		}
	})
	t.Run("cancelled with its parent", func(t *testing.T) {
		parent, cancel := context.WithCancel(context.Background())
		g, ctx := Start(parent, Base{})
		defer g.End()
		done := ctx.Done()
		cancel()
		<-done
		assert.ErrorIs(t, ctx.Err(), context.Canceled)
	})
	t.Run("a child made under it is cancelled by the guard", func(t *testing.T) {
		g, ctx := Start(context.Background(), Base{})
		child, cancel := context.WithCancelCause(ctx) // as net/http makes one
		defer cancel(nil)
		g.ctx.Cancel(ErrResendStopped)
		<-child.Done()
		assert.ErrorIs(t, context.Cause(ctx), ErrResendStopped)
	})
}

func TestGuardKeepsItsSizeClass(t *testing.T) {
	// Every guarded attempt allocates a guard: it stays within 576 bytes,
	// a size class of its own (512 before it held a pointer to pooled hooks
	// beside hooks of its own, for a base that wraps net/http's).
	assert.LessOrEqual(t, unsafe.Sizeof(Guard{}), uintptr(576))
}
