package retryhttp_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"

	"github.com/retryhttp/retryhttp"
)

// A dependency that is down: once it has failed 20 requests, most of the
// next ones are refused at once, without reaching it, and the caller falls
// back.
func ExampleWithAdaptiveThrottling() {
	var reached atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		reached.Add(1)
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	defer srv.Close()

	client := &http.Client{Transport: retryhttp.New(retryhttp.WithAdaptiveThrottling())}
	defer client.CloseIdleConnections()
	refused := 0
	for range 200 {
		resp, err := client.Get(srv.URL)
		if errors.Is(err, retryhttp.ErrThrottled) {
			refused++ // nothing was sent: serve a cached answer instead
			continue
		}
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
	fmt.Println("most requests refused:", refused > 100)
	// Without throttling, 300 attempts reach it: 200 first attempts, and
	// the 100 retries the budget pays for.
	fmt.Println("fewer than half as many attempts:", reached.Load() < 150)
	// Output:
	// most requests refused: true
	// fewer than half as many attempts: true
}
