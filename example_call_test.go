package retryhttp_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"strings"
	"time"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/backoff"
	"github.com/retryhttp/retryhttp/retryhttptest"
)

// post sends a key-less POST with ctx and returns the status and attempts.
func post(client *http.Client, ctx context.Context, url string) (int, int) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(`{"query":"{ user(id: 1) { name } }"}`))
	if err != nil {
		log.Fatal(err)
	}
	resp, err := client.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, retryhttp.Attempts(resp)
}

func ExampleResendable() {
	srv := retryhttptest.NewServer(nil, retryhttptest.First(1, retryhttptest.Status(http.StatusServiceUnavailable)))
	defer srv.Close()
	client := &http.Client{Transport: retryhttp.New(retryhttp.WithBackoff(backoff.Constant(time.Millisecond)))}

	// A read sent as a POST, as GraphQL and the AWS SDKs send theirs: this
	// call says it is safe to resend.
	status, attempts := post(client, retryhttp.Resendable(context.Background()), srv.URL)
	fmt.Println(status, "after", attempts, "attempts")
	// Output:
	// 200 after 2 attempts
}

func ExampleWithResendable() {
	srv := retryhttptest.NewServer(nil, retryhttptest.First(1, retryhttptest.Status(http.StatusServiceUnavailable)))
	defer srv.Close()
	// Every request to this API may be resent, as the AWS SDKs' own
	// retryers assume of every operation.
	client := &http.Client{Transport: retryhttp.New(
		retryhttp.WithResendable(func(*http.Request) bool { return true }),
		retryhttp.WithBackoff(backoff.Constant(time.Millisecond)),
	)}
	status, attempts := post(client, context.Background(), srv.URL)
	fmt.Println(status, "after", attempts, "attempts")
	// Output:
	// 200 after 2 attempts
}

func ExampleMaxAttempts_one() {
	srv := retryhttptest.NewServer(nil, retryhttptest.Status(http.StatusServiceUnavailable))
	defer srv.Close()
	client := &http.Client{Transport: retryhttp.New()}

	req, err := http.NewRequestWithContext(retryhttp.MaxAttempts(context.Background(), 1), http.MethodGet, srv.URL, nil)
	if err != nil {
		log.Fatal(err)
	}
	resp, err := client.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	resp.Body.Close()
	fmt.Println(resp.StatusCode, "after", retryhttp.Attempts(resp), "attempt")
	// Output:
	// 503 after 1 attempt
}
