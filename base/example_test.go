package base_test

import (
	"fmt"
	"log"
	"net/http"
	"time"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/backoff"
	"github.com/retryhttp/retryhttp/base"
	"github.com/retryhttp/retryhttp/retryhttptest"
)

func ExampleNewDialer() {
	srv := retryhttptest.NewServer(nil, retryhttptest.First(1, retryhttptest.Status(http.StatusServiceUnavailable)))
	defer srv.Close()

	// An SDK's transport, or your own: one line makes a retry dial the
	// addresses that failed it last.
	t := &http.Transport{}
	t.DialContext = base.NewDialer().DialContext
	defer t.CloseIdleConnections()

	client := &http.Client{Transport: retryhttp.New(retryhttp.WithBase(t),
		retryhttp.WithOnRetry(func(e retryhttp.RetryEvent) {
			fmt.Println("retrying a", e.StatusCode, "from the instance at", e.Peer.Addr())
		}))}
	resp, err := client.Get(srv.URL)
	if err != nil {
		log.Fatal(err)
	}
	resp.Body.Close()
	fmt.Println("status:", resp.StatusCode, "connections:", srv.Connections())
	// Output:
	// retrying a 503 from the instance at 127.0.0.1
	// status: 200 connections: 2
}

func ExampleAttempt() {
	srv := retryhttptest.NewServer(nil, retryhttptest.First(2, retryhttptest.Status(http.StatusServiceUnavailable)))
	defer srv.Close()

	// A base transport learns each attempt's number from its context, as
	// OpenTelemetry's http.request.resend_count needs.
	next := http.DefaultTransport
	client := &http.Client{Transport: retryhttp.New(
		retryhttp.WithBackoff(backoff.Constant(time.Millisecond)),
		retryhttp.WithBase(roundTripperFunc(func(r *http.Request) (*http.Response, error) {
			fmt.Println("attempt", base.Attempt(r.Context()))
			return next.RoundTrip(r)
		})),
	)}
	resp, err := client.Get(srv.URL)
	if err != nil {
		log.Fatal(err)
	}
	resp.Body.Close()
	fmt.Println(resp.StatusCode)
	// Output:
	// attempt 1
	// attempt 2
	// attempt 3
	// 200
}

// roundTripperFunc makes a function an http.RoundTripper.
type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
