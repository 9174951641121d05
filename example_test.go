package retryhttp_test

import (
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"time"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/backoff"
	"github.com/retryhttp/retryhttp/budget"
)

// flaky starts a local server that answers 503 to its first failures
// requests, then 200.
func flaky(failures int32) (*httptest.Server, *atomic.Int32) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) <= failures {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "ok")
	}))
	return srv, &calls
}

func Example() {
	srv, calls := flaky(2)
	defer srv.Close()

	client := &http.Client{Transport: retryhttp.New()}
	resp, err := client.Get(srv.URL)
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, string(body))
	fmt.Println("attempts:", retryhttp.Attempts(resp), "server calls:", calls.Load())
	// Output:
	// 200 ok
	// attempts: 3 server calls: 3
}

func ExampleNew() {
	srv, _ := flaky(1)
	defer srv.Close()

	tr := retryhttp.New(
		retryhttp.WithMaxAttempts(4),
		retryhttp.WithBackoff(backoff.FullJitter(backoff.Exponential(100*time.Millisecond, 5*time.Second))),
		retryhttp.WithAttemptTimeout(2*time.Second),
		retryhttp.WithOnRetry(func(e retryhttp.RetryEvent) {
			fmt.Printf("attempt %d got %d; retrying\n", e.Attempt, e.StatusCode)
		}),
	)
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Get(srv.URL)
	if err != nil {
		log.Fatal(err)
	}
	resp.Body.Close()
	fmt.Println(resp.Status)
	// Output:
	// attempt 1 got 503; retrying
	// 200 OK
}

func ExampleWithIdempotencyKeys() {
	var keys []string
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		keys = append(keys, r.Header.Get("Idempotency-Key"))
		if calls.Add(1) == 1 {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()

	// Without a key, a POST that got a 502 is not sent again: the server may
	// have acted on it. With a key, the server can tell the retry apart.
	client := &http.Client{Transport: retryhttp.New(retryhttp.WithIdempotencyKeys())}
	resp, err := client.Post(srv.URL, "application/json", strings.NewReader(`{"amount": 10}`))
	if err != nil {
		log.Fatal(err)
	}
	resp.Body.Close()
	fmt.Println(resp.StatusCode, len(keys), "attempts, same key:", keys[0] == keys[1])
	// Output:
	// 201 2 attempts, same key: true
}

func ExampleWithBase() {
	srv, _ := flaky(1)
	defer srv.Close()

	// Wrap any RoundTripper: an SDK's, an instrumented one, an authenticating
	// one. Here, one that adds a header to every attempt.
	base := roundTripperFunc(func(r *http.Request) (*http.Response, error) {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer example")
		return http.DefaultTransport.RoundTrip(r)
	})
	client := &http.Client{Transport: retryhttp.New(retryhttp.WithBase(base))}
	resp, err := client.Get(srv.URL)
	if err != nil {
		log.Fatal(err)
	}
	resp.Body.Close()
	fmt.Println(resp.StatusCode, "after", retryhttp.Attempts(resp), "attempts")
	// Output:
	// 200 after 2 attempts
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func ExampleWithBudget() {
	srv, calls := flaky(1 << 30) // down for good
	defer srv.Close()

	// One budget shared by two clients of the same dependency: 10 tokens pay
	// for two retries at 5 each, then only first attempts go out.
	bucket := budget.NewPerHost(budget.Capacity(10))
	a := &http.Client{Transport: retryhttp.New(retryhttp.WithBudget(bucket), retryhttp.WithBackoff(backoff.Constant(0)))}
	b := &http.Client{Transport: retryhttp.New(retryhttp.WithBudget(bucket), retryhttp.WithBackoff(backoff.Constant(0)))}
	for _, c := range []*http.Client{a, b, a, b} {
		resp, err := c.Get(srv.URL)
		if err != nil {
			log.Fatal(err)
		}
		resp.Body.Close()
	}
	fmt.Println("4 requests,", calls.Load(), "server calls")
	// Output:
	// 4 requests, 6 server calls
}
