package retryhttp_test

import (
	"fmt"
	"net/http"
	"time"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/backoff"
	"github.com/retryhttp/retryhttp/retryhttptest"
)

func ExampleWithOnGiveUp() {
	srv := retryhttptest.NewServer(nil, retryhttptest.Status(http.StatusServiceUnavailable)) // down for good
	defer srv.Close()

	// Count give-ups by reason, as a metric would; the hooks add up, so
	// that an instrumentation and the caller can each have theirs.
	gaveUp := map[retryhttp.GiveUpReason]int{}
	client := &http.Client{Transport: retryhttp.New(
		retryhttp.WithBackoff(backoff.Constant(time.Millisecond)),
		retryhttp.WithOnGiveUp(func(e retryhttp.GiveUpEvent) { gaveUp[e.Reason]++ }),
		retryhttp.WithOnGiveUp(func(e retryhttp.GiveUpEvent) {
			fmt.Printf("gave up after attempt %d (%d): %s\n", e.Attempt, e.StatusCode, e.Reason)
		}),
	)}
	status, _ := get(client, srv.URL)
	fmt.Println(status, gaveUp[retryhttp.GiveUpAttemptsExhausted])
	// Output:
	// gave up after attempt 3 (503): attempts exhausted
	// 503 1
}

func ExampleAttemptFromContext() {
	srv := retryhttptest.NewServer(nil, retryhttptest.First(2, retryhttptest.Status(http.StatusServiceUnavailable)))
	defer srv.Close()

	// A base transport learns each attempt's number from its context, as
	// OpenTelemetry's http.request.resend_count needs.
	base := http.DefaultTransport
	client := &http.Client{Transport: retryhttp.New(
		retryhttp.WithBackoff(backoff.Constant(time.Millisecond)),
		retryhttp.WithBase(baseFunc(func(r *http.Request) (*http.Response, error) {
			fmt.Println("attempt", retryhttp.AttemptFromContext(r.Context()))
			return base.RoundTrip(r)
		})),
	)}
	status, _ := get(client, srv.URL)
	fmt.Println(status)
	// Output:
	// attempt 1
	// attempt 2
	// attempt 3
	// 200
}

type baseFunc func(*http.Request) (*http.Response, error)

func (f baseFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
