package peers

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"time"
)

// NewNaive returns the retry loop people write by hand: c.Attempts attempts
// for any method, after any error, 429 or 5xx, waiting c.Base, 2·c.Base, ...
// (50 ms, 100 ms, ... when c.Base is 0) without jitter or budget, and
// reading a body without GetBody into memory so as to resend it. It drains
// and closes the responses it discards. base nil means a clone of
// http.DefaultTransport.
func NewNaive(base http.RoundTripper, c Config) http.RoundTripper {
	if base == nil {
		base = OwnBase(Naive, nil)
	}
	delay := c.Base
	if delay == 0 {
		delay = 50 * time.Millisecond
	}
	return &naive{base: base, attempts: c.attempts(), delay: delay, cap: c.cap()}
}

type naive struct {
	base     http.RoundTripper
	attempts int
	delay    time.Duration
	cap      time.Duration
}

func (n *naive) RoundTrip(req *http.Request) (*http.Response, error) {
	getBody := req.GetBody
	if req.Body != nil && req.Body != http.NoBody && getBody == nil {
		buf, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		getBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf)), nil }
	}
	delay := n.delay
	for attempt := 1; ; attempt++ {
		a := req
		if attempt > 1 || getBody != nil && req.GetBody == nil {
			a = req.Clone(req.Context())
			if getBody != nil {
				body, err := getBody()
				if err != nil {
					return nil, err
				}
				a.Body = body
			}
		}
		resp, err := n.base.RoundTrip(a)
		failed := err != nil || resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500
		if !failed || attempt == n.attempts {
			return resp, err
		}
		if resp != nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
			resp.Body.Close()
		}
		if err := sleep(req.Context(), delay); err != nil {
			return nil, err
		}
		delay = min(2*delay, n.cap)
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
