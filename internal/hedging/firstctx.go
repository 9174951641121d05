package hedging

import (
	"io"

	"github.com/retryhttp/retryhttp/internal/cancelctx"
)

// The context of a hedged request's first attempt is the caller's, which
// a winning hedge can cancel: a cancelctx.Ctx in the call, which makes its
// Done channel only once something asks for it, so that a first attempt
// answered before the delay over a base that never asks allocates nothing
// for it, and one over a parent that can never be cancelled, the channel
// only. Once the attempt has returned without a hedge it is settled:
// nothing will cancel it, and it is the caller's context.

// firstBody releases the first attempt's context when the caller closes
// its response body. It lives in the hedgeCall, to save an allocation.
type firstBody struct {
	io.ReadCloser
	ctx *cancelctx.Ctx
}

func (b *firstBody) Close() error {
	err := b.ReadCloser.Close()
	b.ctx.Release()
	return err
}
