package hedging

import "io"

// The context of a hedged request's first attempt is the caller's, which
// a winning hedge can cancel: a cancelctx.Ctx in the call, which makes its
// Done channel only once something asks for it, so that a first attempt
// answered before the delay over a base that never asks allocates nothing
// for it, and one over a parent that can never be cancelled, the channel
// only. Once the attempt has returned without a hedge it is settled:
// nothing will cancel it, and it is the caller's context. A first attempt
// sent apart (latency.Host.SendApart) follows the caller's context instead
// (cancelctx.Ctx.Follow), so that a hedge that wins can leave it to answer
// after the caller is gone.

// firstBody releases the first attempt's context when the caller closes
// its response body. It lives in the hedgeCall, to save an allocation.
type firstBody struct {
	io.ReadCloser
	c *hedgeCall
}

func (b *firstBody) Close() error {
	err := b.ReadCloser.Close()
	b.c.releaseFirst()
	return err
}
