package googleretry_test

import (
	"fmt"
	"log"
	"net/http"
	"time"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/backoff"
	"github.com/retryhttp/retryhttp/classify"
	"github.com/retryhttp/retryhttp/googleretry"
	"github.com/retryhttp/retryhttp/retryhttptest"
)

func ExampleClassifier() {
	limited := retryhttptest.Respond(http.StatusForbidden, http.Header{"Content-Type": {"application/json; charset=UTF-8"}},
		`{"error":{"errors":[{"domain":"usageLimits","reason":"userRateLimitExceeded","message":"User Rate Limit Exceeded"}],`+
			`"code":403,"message":"User Rate Limit Exceeded"}}`)
	srv := retryhttptest.NewServer(nil, retryhttptest.First(1, limited))
	defer srv.Close()

	client := &http.Client{Transport: retryhttp.New(
		retryhttp.WithClassifier(classify.First(googleretry.Classifier(), classify.Default())),
		retryhttp.WithThrottleBackoff(backoff.Constant(10*time.Millisecond)),
		retryhttp.WithOnRetry(func(e retryhttp.RetryEvent) {
			fmt.Printf("attempt %d: %d, throttle: %t\n", e.Attempt, e.StatusCode, e.Verdict.Throttle)
		}),
	)}
	status, attempts := get(client, srv.URL)
	fmt.Println(status, "after", attempts, "attempts")
	// Output:
	// attempt 1: 403, throttle: true
	// 200 after 2 attempts
}

// get sends a GET to url with client and returns the status and the number
// of attempts it took.
func get(client *http.Client, url string) (int, int) {
	resp, err := client.Get(url)
	if err != nil {
		log.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, retryhttp.Attempts(resp)
}
