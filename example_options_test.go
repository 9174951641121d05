package retryhttp_test

import (
	"fmt"
	"log"
	"net/http"
	"time"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/backoff"
	"github.com/retryhttp/retryhttp/retryhttptest"
)

// get sends a GET to url and returns the status and attempts it took.
func get(client *http.Client, url string) (int, int) {
	resp, err := client.Get(url)
	if err != nil {
		log.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, retryhttp.Attempts(resp)
}

func ExampleWithMaxAttempts() {
	srv := retryhttptest.NewServer(nil, retryhttptest.Status(http.StatusServiceUnavailable)) // down for good
	defer srv.Close()

	client := &http.Client{Transport: retryhttp.New(
		retryhttp.WithMaxAttempts(5),
		retryhttp.WithBackoff(backoff.Constant(time.Millisecond)),
	)}
	status, attempts := get(client, srv.URL)
	// The last response is returned as a plain transport would return it.
	fmt.Println(status, "after", attempts, "attempts")
	// Output:
	// 503 after 5 attempts
}

func ExampleWithBackoff() {
	srv := retryhttptest.NewServer(nil, retryhttptest.First(3, retryhttptest.Status(http.StatusBadGateway)))
	defer srv.Close()

	// Linear steps of 10 ms, without jitter so that the output is stable.
	// Keep jitter in production: FullJitter(Exponential(base, cap)).
	client := &http.Client{Transport: retryhttp.New(
		retryhttp.WithMaxAttempts(4),
		retryhttp.WithBackoff(backoff.Linear(10*time.Millisecond, time.Second)),
		retryhttp.WithOnRetry(func(e retryhttp.RetryEvent) {
			fmt.Printf("attempt %d: %d, next in %v\n", e.Attempt, e.StatusCode, e.Delay)
		}),
	)}
	status, _ := get(client, srv.URL)
	fmt.Println(status)
	// Output:
	// attempt 1: 502, next in 10ms
	// attempt 2: 502, next in 20ms
	// attempt 3: 502, next in 30ms
	// 200
}

func ExampleWithAttemptTimeout() {
	// The first attempt hangs; the timeout ends it and the retry succeeds.
	srv := retryhttptest.NewServer(nil, retryhttptest.First(1, retryhttptest.Hang()))
	defer srv.Close()

	client := &http.Client{Transport: retryhttp.New(retryhttp.WithAttemptTimeout(250 * time.Millisecond))}
	status, attempts := get(client, srv.URL)
	fmt.Println(status, "after", attempts, "attempts:", srv.Request("GET /").Outcomes)
	// Output:
	// 200 after 2 attempts: [hang pass]
}

func ExampleWithRetryAfterLimit() {
	// A server asking for an hour is not waited for: its response comes
	// back at once, for the caller to act on.
	srv := retryhttptest.NewServer(nil, retryhttptest.RetryAfter(http.StatusServiceUnavailable, time.Hour))
	defer srv.Close()

	client := &http.Client{Transport: retryhttp.New(retryhttp.WithRetryAfterLimit(10 * time.Second))}
	start := time.Now()
	resp, err := client.Get(srv.URL)
	if err != nil {
		log.Fatal(err)
	}
	resp.Body.Close()
	fmt.Println(resp.StatusCode, "Retry-After:", resp.Header.Get("Retry-After"),
		"attempts:", srv.Attempts(), "waited:", time.Since(start) > time.Second)
	// Output:
	// 503 Retry-After: 3600 attempts: 1 waited: false
}

func ExampleWithoutBudget() {
	srv := retryhttptest.NewServer(nil, retryhttptest.Status(http.StatusServiceUnavailable))
	defer srv.Close()

	// Without a budget every request gets all its attempts, however many
	// fail: 3 attempts for each of 100 requests to a host that is down.
	// With the default budget, the host would see about 200.
	client := &http.Client{Transport: retryhttp.New(
		retryhttp.WithoutBudget(),
		retryhttp.WithBackoff(backoff.Constant(0)),
	)}
	for range 100 {
		get(client, srv.URL)
	}
	fmt.Println(srv.Attempts(), "attempts")
	// Output:
	// 300 attempts
}
