package main

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/httptest"
	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v85"
)

// TestRun checks the demonstration's whole output, delays aside, and so its
// figures: the POST whose response was lost arrived twice and created one
// PaymentIntent; the 503 with Stripe-Should-Retry: true was retried once;
// the 500 with Stripe-Should-Retry: false was attempted once.
func TestRun(t *testing.T) {
	var out strings.Builder
	require.NoError(t, run(&out))

	got := regexp.MustCompile(`retrying in [0-9.]+[nµm]?s`).ReplaceAllString(out.String(), "retrying in DELAY")
	want := `stripe-go (MaxNetworkRetries 0) over retryhttp, against a local fake of the Stripe API.

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
`
	require.Equal(t, want, got)
}

// TestStripeKeysEveryPOST checks what the example relies on: with its own
// retries off, stripe-go still sends an Idempotency-Key with every POST, so
// retryhttp may resend it, and the same key on each of retryhttp's attempts.
func TestStripeKeysEveryPOST(t *testing.T) {
	srv := httptest.NewServer(newFakeStripe(), httptest.First(1, httptest.Status(http.StatusServiceUnavailable)))
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
