package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/classify"
	"github.com/retryhttp/retryhttp/retryhttptest"
	"github.com/stripe/stripe-go/v85"
)

// runStripe makes three calls through stripe-go and retryhttp, each to a
// fake of the Stripe API behind a server that misbehaves in one way, and
// writes to w what the client saw, each retry, and what the server counted.
// opts are added to the Transport's.
//
// stripe-go accepts an *http.Client and a base URL for its backend. Setting
// MaxNetworkRetries to 0 leaves the retrying to retryhttp, which then sees
// every attempt. Two things make Stripe a good fit:
//
//   - stripe-go's services send an Idempotency-Key with every POST (and
//     DELETE), whatever MaxNetworkRetries is: the one set with
//     params.SetIdempotencyKey, or else a random one of their own.
//     retryhttp resends a POST only when it carries such a key, and Stripe
//     answers a resent key with the response it stored for the first, so a
//     retried POST is executed once.
//   - The Stripe API tells clients whether to retry in its
//     Stripe-Should-Retry header, which retryhttp follows when
//     classify.ShouldRetry names it.
func runStripe(w io.Writer, opts ...retryhttp.Option) error {
	tr := retryhttp.New(append([]retryhttp.Option{
		// Follow Stripe's header first, then the default rules.
		retryhttp.WithClassifier(classify.First(classify.ShouldRetry("Stripe-Should-Retry"), classify.Default())),
		printRetries(w),
	}, opts...)...)
	defer tr.CloseIdleConnections()
	httpClient := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	ctx := context.Background()

	api := newFakeStripe()
	var attempts int
	fmt.Fprintln(w, "stripe-go (MaxNetworkRetries 0) over retryhttp, against a local fake of the Stripe API.")

	// 1. The first attempt runs on the server, and its response is lost.
	// Each step has a server of its own, so this POST goes over a new
	// connection: over a reused one, net/http itself would resend a POST
	// with an Idempotency-Key that failed this way, unseen by retryhttp.
	srv := retryhttptest.NewServer(api, retryhttptest.First(1, retryhttptest.ResetAfterRead()))
	defer srv.Close()
	fmt.Fprintln(w)
	fmt.Fprintln(w, "1. Create a PaymentIntent: POST /v1/payment_intents, Idempotency-Key order-1042.")
	fmt.Fprintln(w, "   The server runs the first attempt, then resets the connection instead of answering.")
	params := &stripe.PaymentIntentCreateParams{
		Amount:   stripe.Int64(2000),
		Currency: stripe.String(stripe.CurrencyEUR),
	}
	// stripe-go would send a random key of its own; one derived from the
	// order also holds across restarts of this program.
	params.SetIdempotencyKey("order-1042")
	pi, err := newStripeClient(srv.URL, httpClient).V1PaymentIntents.Create(ctx, params)
	if err != nil {
		return fmt.Errorf("creating the PaymentIntent: %w", err)
	}
	fmt.Fprintf(w, "   client: got %s, %d %s, %s; Idempotent-Replayed: %s\n",
		pi.ID, pi.Amount, pi.Currency, pi.Status, pi.LastResponse.Header.Get("Idempotent-Replayed"))
	rec := srv.Request("order-1042")
	created, replayed := api.Counts()
	fmt.Fprintf(w, "   server: %s, handler runs: %d, the same body each time: %t\n",
		attempted(rec), rec.Executions, rec.SameBody)
	fmt.Fprintf(w, "   server: PaymentIntents created: %d, stored responses replayed: %d\n", created, replayed)
	attempts += srv.Attempts()

	// 2. Stripe asks for a retry.
	srv = retryhttptest.NewServer(api, retryhttptest.First(1, stripeFault(http.StatusServiceUnavailable, true,
		"api_error", "The service is temporarily unavailable.")))
	defer srv.Close()
	fmt.Fprintln(w)
	fmt.Fprintf(w, "2. Retrieve it: GET /v1/payment_intents/%s.\n", pi.ID)
	fmt.Fprintln(w, "   The server answers the first attempt 503 with Stripe-Should-Retry: true.")
	got, err := newStripeClient(srv.URL, httpClient).V1PaymentIntents.Retrieve(ctx, pi.ID, nil)
	if err != nil {
		return fmt.Errorf("retrieving the PaymentIntent: %w", err)
	}
	fmt.Fprintf(w, "   client: got %s, %s\n", got.ID, got.Status)
	rec = srv.Requests()[0]
	fmt.Fprintf(w, "   server: %s, handler runs: %d\n", attempted(rec), rec.Executions)
	attempts += srv.Attempts()

	// 3. Stripe says not to retry: a 500 that retryhttp's default rules
	// would retry, since the POST carries a key.
	srv = retryhttptest.NewServer(api, stripeFault(http.StatusInternalServerError, false,
		"api_error", "An unknown error occurred."))
	defer srv.Close()
	fmt.Fprintln(w)
	fmt.Fprintln(w, "3. Create another: POST /v1/payment_intents, Idempotency-Key order-1043.")
	fmt.Fprintln(w, "   The server answers every attempt 500 with Stripe-Should-Retry: false.")
	params = &stripe.PaymentIntentCreateParams{
		Amount:   stripe.Int64(500),
		Currency: stripe.String(stripe.CurrencyEUR),
	}
	params.SetIdempotencyKey("order-1043")
	_, err = newStripeClient(srv.URL, httpClient).V1PaymentIntents.Create(ctx, params)
	var stripeErr *stripe.Error
	if !errors.As(err, &stripeErr) {
		return fmt.Errorf("creating the second PaymentIntent: got %v, want a Stripe API error", err)
	}
	fmt.Fprintf(w, "   client: error %d %s: %s\n", stripeErr.HTTPStatusCode, stripeErr.Type, stripeErr.Msg)
	rec = srv.Request("order-1043")
	fmt.Fprintf(w, "   server: %s, handler runs: %d\n", attempted(rec), rec.Executions)
	attempts += srv.Attempts()

	fmt.Fprintln(w)
	created, _ = api.Counts()
	fmt.Fprintf(w, "In all: 3 SDK calls, %d attempts, PaymentIntents created: %d.\n", attempts, created)
	return nil
}

// newStripeClient returns a Stripe client that sends its requests through
// httpClient to the API at url, and leaves retrying to httpClient.
func newStripeClient(url string, httpClient *http.Client) *stripe.Client {
	backends := stripe.NewBackendsWithConfig(&stripe.BackendConfig{
		HTTPClient:        httpClient,
		URL:               stripe.String(url),
		MaxNetworkRetries: stripe.Int64(0),
		LeveledLogger:     &stripe.LeveledLogger{Level: stripe.LevelNull},
	})
	return stripe.NewClient("sk_test_fake", stripe.WithBackends(backends))
}
