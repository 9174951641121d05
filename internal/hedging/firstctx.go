package hedging

import (
	"context"
	"io"

	"github.com/retryhttp/retryhttp/internal/cancelctx"
)

// firstCtx is the context of a hedged request's first attempt: the
// caller's context, which a winning hedge can cancel. It is a
// cancelctx.Ctx, which makes its Done channel only once something asks for
// it, so that a first attempt answered before the delay over a base that
// never asks allocates nothing for it, and one over a parent that can
// never be cancelled, the channel only. Once the attempt has returned
// without a hedge it is settled: nothing will cancel it, and it is the
// caller's context.
type firstCtx struct{ cancelctx.Ctx }

// cancel ends the attempt, unless it is settled.
func (c *firstCtx) cancel() { c.Cancel(context.Canceled) }

// settle marks the attempt as never to be cancelled, and reports whether
// its context must be released (by release) once its response is done
// with: when it was made under a parent that can be cancelled, which holds
// it until then.
func (c *firstCtx) settle() bool { return c.Settle() }

// release releases the context made by the attempt. Like a CancelFunc, it
// may be called more than once.
func (c *firstCtx) release() { c.Release() }

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
