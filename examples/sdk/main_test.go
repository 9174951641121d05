package main

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/backoff"
	"github.com/retryhttp/retryhttp/retryhttptest"
	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v85"
)

// fast makes a Transport's backoffs short, so that the tests take no
// longer than the Retry-After the fakes send (1 s).
var fast = []retryhttp.Option{
	retryhttp.WithBackoff(backoff.Constant(time.Millisecond)),
	retryhttp.WithThrottleBackoff(backoff.Constant(time.Millisecond)),
}

// TestRun checks the demonstration's whole output, delays aside, and so its
// figures, which the other tests check one by one.
func TestRun(t *testing.T) {
	var out strings.Builder
	require.NoError(t, run(&out, fast...))

	got := regexp.MustCompile(`(retrying|resuming there) in [0-9.]+[nµm]?s`).ReplaceAllString(out.String(), "$1 in DELAY")
	require.Equal(t, wantRun, got)
}

const wantRun = `stripe-go (MaxNetworkRetries 0) over retryhttp, against a local fake of the Stripe API.

1. Create a PaymentIntent: POST /v1/payment_intents, Idempotency-Key order-1042.
   The server runs the first attempt, then resets the connection instead of answering.
   retryhttp: attempt 1 failed: read: connection reset by peer; retrying in DELAY
   client: got pi_0001, 2000 eur, requires_payment_method; Idempotent-Replayed: true
   server: 2 attempts (reset, pass), handler runs: 2, the same body each time: true
   server: PaymentIntents created: 1, stored responses replayed: 1

2. Retrieve it: GET /v1/payment_intents/pi_0001.
   The server answers the first attempt 503 with Stripe-Should-Retry: true.
   retryhttp: attempt 1 got 503; retrying in DELAY
   client: got pi_0001, requires_payment_method
   server: 2 attempts (503, pass), handler runs: 1

3. Create another: POST /v1/payment_intents, Idempotency-Key order-1043.
   The server answers every attempt 500 with Stripe-Should-Retry: false.
   client: error 500 api_error: An unknown error occurred.
   server: 1 attempt (500), handler runs: 0

In all: 3 SDK calls, 5 attempts, PaymentIntents created: 1.

------------------------------------------------------------------------

aws-sdk-go-v2 DynamoDB (Retryer: aws.NopRetryer{}) over retryhttp, against dynalite behind a faulty proxy.

1. PutItem order o-1 to table orders, no condition, with retryhttp.Resendable(ctx).
   The proxy answers 503; then DynamoDB writes the item and the proxy resets the connection.
   retryhttp: attempt 1 got 503; retrying in DELAY
   retryhttp: attempt 2 failed: read: connection reset by peer; retrying in DELAY
   client: done
   proxy: 3 attempts (503, reset, pass), executed by DynamoDB: 2, the same body each time: true

2. GetItem o-1: resendable, since WithResendable(dynamoDBRead) names GetItem.
   The proxy answers 503, then 400 ProvisionedThroughputExceededException, its code only in the body.
   retryhttp: attempt 1 got 503; retrying in DELAY
   retryhttp: attempt 2 got 400, a throttle; retrying in DELAY
   client: got o-1, total 2000
   proxy: 3 attempts (503, 400, pass), executed by DynamoDB: 1

3. PutItem order o-2 if it does not exist (attribute_not_exists(id)), not declared resendable.
   DynamoDB writes the item, then the proxy resets the connection.
   client: error after 1 attempt: read: connection reset by peer
   proxy: 1 attempt (reset), executed by DynamoDB: 1

4. The same PutItem again, as a resend would have sent it.
   client: ConditionalCheckFailedException: The conditional request failed; the write had succeeded

In all: 4 SDK calls, 8 attempts, items in the table: 2.

------------------------------------------------------------------------

aws-sdk-go-v2 S3 (Retryer: aws.NopRetryer{}) over retryhttp, against gofakes3 behind a faulty proxy.

1. PutObject photos/cat.jpg, 64 KiB from a bytes.Reader.
   S3 stores it and the proxy resets the connection; then the proxy answers 503 SlowDown.
   retryhttp: attempt 1 failed: read: connection reset by peer; retrying in DELAY
   retryhttp: attempt 2 got 503, a throttle; retrying in DELAY
   client: done
   proxy: 3 attempts (reset, 503, pass), executed by S3: 2, the same body each time: true
   S3: signatures rejected: 0, the object is the upload: true

2. GetObject photos/cat.jpg.
   The proxy answers 503 without a body, as a load balancer may.
   retryhttp: attempt 1 got 503, a throttle; retrying in DELAY
   client: got 64 KiB, the same bytes: true
   proxy: 2 attempts (503, pass), executed by S3: 1

3. PutObject videos/cat.mp4, 1536 KiB: more than the 1 MiB retryhttp buffers by default.
   The proxy answers 503 SlowDown, its code only in the XML body.
   client: error SlowDown: Please reduce your request rate.
   proxy: 1 attempt (503), executed by S3: 0

4. The same PutObject with a CRC32 checksum, through a Transport with WithBodyBufferLimit(8 << 20).
   The proxy answers 503 SlowDown, its code only in the XML body.
   retryhttp: attempt 1 got 503, a throttle; retrying in DELAY
   client: done
   proxy: 2 attempts (503, pass), executed by S3: 1, the same body each time: true

5. GetObject videos/cat.mp4, with the SDK's checksum validation on (ChecksumMode ENABLED).
   The proxy closes the connection after 512 KiB of the body.
   retryhttp: body failed at byte 524288: unexpected EOF; resuming there in DELAY
   client: got 1536 KiB, the same bytes: true, the SDK validated its CRC32 f9WVFg==
   proxy: 2 attempts (close after 524288, pass); the second with Range: bytes=524288-, If-Range: the ETag: true

In all: 5 SDK calls, 10 attempts, signatures rejected: 0, each object the bytes uploaded: true.

------------------------------------------------------------------------

go-github over retryhttp, against a local fake of the GitHub REST API.

1. Get the repository retryhttp/retryhttp: GET /repos/retryhttp/retryhttp.
   The server answers 502.
   retryhttp: attempt 1 got 502; retrying in DELAY
   client: got retryhttp/retryhttp, default branch main
   server: 2 attempts (502, pass), handler runs: 1

2. Get it again.
   The server answers 403, a secondary rate limit, with Retry-After: 1.
   retryhttp: attempt 1 got 403, a throttle; retrying in DELAY
   client: got retryhttp/retryhttp, after waiting at least 1s: true
   server: 2 attempts (403 Retry-After: 1, pass), handler runs: 1

3. Get it with a token that may not.
   The server answers 403 Resource not accessible, with requests remaining.
   client: error 403: Resource not accessible by integration
   server: 1 attempt (403), handler runs: 0

In all: 3 SDK calls, 5 attempts, repositories served: 2.
`

// TestStripeKeysEveryPOST checks what the example relies on: with its own
// retries off, stripe-go still sends an Idempotency-Key with every POST, so
// retryhttp may resend it, and the same key on each of retryhttp's attempts.
func TestStripeKeysEveryPOST(t *testing.T) {
	srv := retryhttptest.NewServer(newFakeStripe(), retryhttptest.First(1, retryhttptest.Status(http.StatusServiceUnavailable)))
	defer srv.Close()
	sc := newStripeClient(srv.URL, &http.Client{Transport: retryhttp.New()})

	_, err := sc.V1PaymentIntents.Create(context.Background(), &stripe.PaymentIntentCreateParams{
		Amount:   stripe.Int64(100),
		Currency: stripe.String(stripe.CurrencyEUR),
	})
	require.NoError(t, err)

	reqs := srv.Requests()
	require.Len(t, reqs, 1, "both attempts should carry one key")
	require.NotContains(t, reqs[0].Key, "POST ", "the key should be an Idempotency-Key, not the method and target")
	require.Equal(t, 2, reqs[0].Attempts)
	require.Equal(t, []string{"503", "pass"}, reqs[0].Outcomes)
}
