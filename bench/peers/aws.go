package peers

import (
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// NewAWS returns a RoundTripper that drives the AWS SDK for Go v2's
// Standard retryer (retry.NewStandard) around base (the SDK's default
// transport, awshttp.NewBuildableClient's, when base is nil), making the same
// calls in the same order as the SDK's retry middleware (retry.Attempt) does
// around a service call: GetAttemptToken before each attempt and its release
// after; IsErrorRetryable; the attempt limit; GetRetryToken, which takes from
// the retry quota; RetryDelay; the wait. As in the SDK, a transport error
// reaches the retryer as a smithyhttp.RequestSendError (a smithy
// CanceledError once the caller's context is done), and a response that is
// not 2xx as a smithyhttp.ResponseError carrying the status code.
//
// Equivalent configuration: MaxAttempts is c.Attempts. 429 is added to the
// retryable status codes (500, 502, 503 and 504 by default): the SDK retries
// throttling through service error codes, which a plain HTTP server does
// not send, so this is the status-code equivalent. With c.Base set, the
// Backoff is full jitter over c.Base·2ⁿ⁻¹ capped at c.Cap, the shape the
// SDK's own exponential jitter backoff has with a 50 ms base in its 2026
// retry mode; otherwise it is the SDK's default (uniform in [0, 2ⁿ s)). The
// retry quota is the SDK's default (500 tokens, 5 a retry, 10 after a
// timeout, 1 back per success) unless c.NoBudget, which sets
// ratelimit.None.
//
// The SDK never reads Retry-After. It rewinds a request body only when the
// body is seekable; here, as with a non-seekable stream in the SDK, a body
// without GetBody is sent once and not retried.
func NewAWS(base http.RoundTripper, c Config) http.RoundTripper {
	if base == nil {
		base = OwnBase(AWS, nil)
	}
	return &awsTransport{base: base, retryer: retry.NewStandard(standardOptions(c))}
}

// standardOptions configures the SDK's Standard retryer as NewAWS says.
func standardOptions(c Config) func(*retry.StandardOptions) {
	return func(o *retry.StandardOptions) {
		o.MaxAttempts = c.attempts()
		o.Retryables = append(o.Retryables, retry.RetryableHTTPStatusCode{
			Codes: map[int]struct{}{http.StatusTooManyRequests: {}},
		})
		if c.Base > 0 {
			base, limit := c.Base, c.cap()
			o.Backoff = retry.BackoffDelayerFunc(func(attempt int, _ error) (time.Duration, error) {
				return fullJitter(base, limit, attempt), nil
			})
		}
		if c.NoBudget {
			o.RateLimiter = ratelimit.None
		}
	}
}

// fullJitter returns a delay uniform in [0, min(base·2ⁿ⁻¹, limit)).
func fullJitter(base, limit time.Duration, n int) time.Duration {
	d := limit
	if n <= 62 && base<<(n-1)>>(n-1) == base {
		d = min(base<<(n-1), limit)
	}
	return time.Duration(rand.Int64N(int64(d) + 1))
}

// awsTransport drives an SDK retryer, the Standard one or the adaptive
// mode, around base, as the SDK's retry middleware does.
type awsTransport struct {
	base    http.RoundTripper
	retryer aws.RetryerV2
}

var errStatus = errors.New("unsuccessful HTTP status")

func nopRelease(error) error { return nil }

func (t *awsTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	replayable := req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
	releaseRetry := nopRelease
	for attempt := 1; ; attempt++ {
		a := req
		if attempt > 1 {
			a = req.WithContext(ctx)
			if req.GetBody != nil {
				body, err := req.GetBody()
				if err != nil {
					return nil, err
				}
				a.Body = body
			}
		}
		releaseAttempt, err := t.retryer.GetAttemptToken(ctx)
		if err != nil {
			return nil, err
		}
		resp, err := t.base.RoundTrip(a)

		var opErr error
		switch {
		case err != nil && ctx.Err() != nil:
			opErr = &smithy.CanceledError{Err: ctx.Err()}
		case err != nil:
			opErr = &smithyhttp.RequestSendError{Err: err}
		case resp.StatusCode < 200 || resp.StatusCode > 299:
			opErr = &smithyhttp.ResponseError{Response: &smithyhttp.Response{Response: resp}, Err: errStatus}
		}
		_ = releaseRetry(opErr)
		_ = releaseAttempt(opErr)
		if opErr == nil || !replayable || attempt >= t.retryer.MaxAttempts() ||
			!t.retryer.IsErrorRetryable(opErr) {
			return resp, err
		}
		next, terr := t.retryer.GetRetryToken(ctx, opErr)
		if terr != nil {
			return resp, err // the retry quota is exhausted
		}
		delay, derr := t.retryer.RetryDelay(attempt, opErr)
		if derr != nil {
			return resp, err
		}
		if resp != nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
			resp.Body.Close()
		}
		if err := sleep(ctx, delay); err != nil {
			return nil, err
		}
		releaseRetry = next
	}
}

var _ http.RoundTripper = (*awsTransport)(nil)
