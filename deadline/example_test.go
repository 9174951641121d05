package deadline_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/base"
	"github.com/retryhttp/retryhttp/deadline"
)

func ExampleSent() {
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()

	// A base under the Transport reads the time each attempt carries.
	next := http.DefaultTransport
	logged := roundTripperFunc(func(r *http.Request) (*http.Response, error) {
		if left, ok := deadline.Sent(r.Context()); ok {
			fmt.Println("attempt", base.Attempt(r.Context()), "sent", left.Round(100*time.Millisecond))
		}
		return next.RoundTrip(r)
	})
	client := &http.Client{Transport: retryhttp.New(retryhttp.WithBase(logged), retryhttp.WithDeadlineHeader(deadline.GRPCTimeout))}
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	resp, err := client.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	resp.Body.Close()
	// Output:
	// attempt 1 sent 1.5s
}

// roundTripperFunc makes a function an http.RoundTripper.
type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
