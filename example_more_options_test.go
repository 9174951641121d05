package retryhttp_test

import (
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/backoff"
	"github.com/retryhttp/retryhttp/classify"
	"github.com/retryhttp/retryhttp/retryhttptest"
)

func ExampleWithClassifier() {
	srv := retryhttptest.NewServer(nil, retryhttptest.First(1, retryhttptest.Status(http.StatusInternalServerError)))
	defer srv.Close()

	// This API's 500 is final: never retry it.
	client := &http.Client{Transport: retryhttp.New(retryhttp.WithClassifier(classify.First(classify.Statuses(classify.DontRetry, 500), classify.Default())))}
	status, attempts := get(client, srv.URL)
	fmt.Println(status, "after", attempts, "attempt")
	// Output:
	// 500 after 1 attempt
}

func ExampleWithThrottleBackoff() {
	srv := retryhttptest.NewServer(nil, retryhttptest.First(2, retryhttptest.Status(http.StatusTooManyRequests)))
	defer srv.Close()

	// A 429 without Retry-After waits by the throttle backoff, here a
	// constant 20 ms; other failures by the usual backoff.
	client := &http.Client{Transport: retryhttp.New(
		retryhttp.WithThrottleBackoff(backoff.Constant(20*time.Millisecond)),
		retryhttp.WithOnRetry(func(e retryhttp.RetryEvent) {
			fmt.Println(e.StatusCode, "throttle:", e.Verdict.Throttle, "wait:", e.Delay)
		}),
	)}
	status, _ := get(client, srv.URL)
	fmt.Println(status)
	// Output:
	// 429 throttle: true wait: 20ms
	// 429 throttle: true wait: 20ms
	// 200
}

func ExampleWithOnRetry() {
	srv := retryhttptest.NewServer(nil, retryhttptest.First(2, retryhttptest.Status(http.StatusBadGateway)))
	defer srv.Close()

	client := &http.Client{Transport: retryhttp.New(
		retryhttp.WithBackoff(backoff.Constant(time.Millisecond)),
		retryhttp.WithOnRetry(func(e retryhttp.RetryEvent) {
			fmt.Printf("attempt %d failed with %d: %s\n", e.Attempt, e.StatusCode, e.Verdict.Decision)
		}),
	)}
	status, _ := get(client, srv.URL)
	fmt.Println(status)
	// Output:
	// attempt 1 failed with 502: retry
	// attempt 2 failed with 502: retry
	// 200
}

func ExampleWithLogger() {
	srv := retryhttptest.NewServer(nil, retryhttptest.First(1, retryhttptest.Status(http.StatusServiceUnavailable)))
	defer srv.Close()

	// Debug records, without the time, the URL and the peer's port, which
	// change from run to run. At INFO, this call, which its retry rescued,
	// would log nothing.
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		Level: slog.LevelDebug,
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey || a.Key == "url" || a.Key == "delay" || a.Key == "network.peer.port" {
				return slog.Attr{}
			}
			return a
		},
	}))
	client := &http.Client{Transport: retryhttp.New(
		retryhttp.WithLogger(logger),
		retryhttp.WithBackoff(backoff.Constant(time.Millisecond)),
	)}
	status, _ := get(client, srv.URL+"/items?token=secret")
	fmt.Println(status)
	// Output:
	// level=DEBUG msg="retryhttp: attempt" method=GET attempt=1 status=503 network.peer.address=127.0.0.1
	// level=DEBUG msg="retryhttp: retrying" method=GET attempt=1 status=503 network.peer.address=127.0.0.1
	// level=DEBUG msg="retryhttp: attempt" method=GET attempt=2 status=200 network.peer.address=127.0.0.1
	// 200
}

func ExampleWithAttemptHeader() {
	srv := retryhttptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Println("attempt", r.Header.Get("Retry-Attempt"))
	}), retryhttptest.First(1, retryhttptest.Status(http.StatusServiceUnavailable)))
	defer srv.Close()

	client := &http.Client{Transport: retryhttp.New(
		retryhttp.WithAttemptHeader("Retry-Attempt"),
		retryhttp.WithBackoff(backoff.Constant(time.Millisecond)),
	)}
	status, _ := get(client, srv.URL)
	fmt.Println(status)
	// Output:
	// attempt 2/3
	// 200
}

func ExampleWithRateLimitHints() {
	// A 429 that says, in X-RateLimit-Reset, that the limit resets in 1 s.
	srv := retryhttptest.NewServer(nil, retryhttptest.First(1, retryhttptest.Respond(http.StatusTooManyRequests,
		http.Header{"X-Ratelimit-Reset": {"1"}}, "")))
	defer srv.Close()

	client := &http.Client{Transport: retryhttp.New(
		retryhttp.WithRateLimitHints(),
		retryhttp.WithThrottleBackoff(backoff.Constant(time.Millisecond)),
		retryhttp.WithOnRetry(func(e retryhttp.RetryEvent) { fmt.Println("waits for the reset:", e.Delay == time.Second) }),
	)}
	status, _ := get(client, srv.URL)
	fmt.Println(status)
	// Output:
	// waits for the reset: true
	// 200
}

func ExampleWithBodyBufferLimit() {
	srv := retryhttptest.NewServer(nil, retryhttptest.First(1, retryhttptest.Status(http.StatusServiceUnavailable)))
	defer srv.Close()

	client := &http.Client{Transport: retryhttp.New(
		retryhttp.WithBodyBufferLimit(16),
		retryhttp.WithBackoff(backoff.Constant(time.Millisecond)),
	)}
	// Bodies without GetBody (an io.Reader that is none of the types
	// http.NewRequest knows) are copied as they are sent, up to the limit.
	for i, body := range []string{"short", "longer than sixteen bytes"} {
		url := fmt.Sprintf("%s/doc/%d", srv.URL, i)
		req, _ := http.NewRequest(http.MethodPut, url, io.MultiReader(strings.NewReader(body)))
		resp, err := client.Do(req)
		if err != nil {
			log.Fatal(err)
		}
		resp.Body.Close()
		fmt.Printf("%d bytes: %d after %d attempts\n", len(body), resp.StatusCode, retryhttp.Attempts(resp))
	}
	// Output:
	// 5 bytes: 200 after 2 attempts
	// 25 bytes: 503 after 1 attempts
}
