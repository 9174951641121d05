package retryhttp

import (
	"errors"
	"iter"
	"log/slog"
	"net/http"
	"time"

	"github.com/retryhttp/retryhttp/internal/layer"
	"github.com/retryhttp/retryhttp/internal/throttling"
	"github.com/retryhttp/retryhttp/throttle"
)

// ErrThrottled is the error, wrapped in an *Error with no attempts, of a
// request that adaptive throttling (WithAdaptiveThrottling) refused without
// sending it, because its host has been failing.
var ErrThrottled = errors.New("retryhttp: throttled: the host has been failing")

// newThrottling returns the adaptive throttling of t, configured by opts:
// it reads t's clock and random source at each use, and t logs the first
// panic of a throttle.Store.
func newThrottling(t *Transport, opts []throttle.Option) *throttling.Throttler {
	return throttling.New(opts, throttling.Env{
		Now:           func() time.Time { return t.now() },
		Rand:          func() float64 { return t.rand() },
		StorePanicked: func(r any) { t.log().Panic("retryhttp: throttle store panicked; throttling on local counts", r) },
	})
}

// shed ends req, refused by adaptive throttling with probability p, before
// any attempt: it closes the body, logs and reports the refusal, and tells
// a server.Handler serving the request that a dependency was shed.
func (t *Transport) shed(req *http.Request, p float64) (*http.Response, error) {
	if req.Body != nil {
		req.Body.Close()
	}
	t.log().NotSent(req, 0, "retryhttp: throttled", string(GiveUpThrottled), slog.Float64("rejection_probability", p))
	t.reportGiveUp(req, GiveUpThrottled, ErrThrottled)
	layer.MarkShed(req.Context())
	return nil, &Error{Err: ErrThrottled}
}

// Rejections returns an iterator over the hosts whose outcomes adaptive
// throttling counts, with the probability that a request to each is refused
// now, in no particular order, for a gauge: every host requested lately, at
// most 1024.
// Without WithAdaptiveThrottling it yields nothing. Each host is locked
// briefly while its probability is computed.
func (t *Transport) Rejections() iter.Seq[throttle.Rejection] {
	if th := t.ready().throttle; th != nil {
		return th.Rejections()
	}
	return func(func(throttle.Rejection) bool) {}
}
