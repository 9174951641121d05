package githubretry_test

import (
	"fmt"
	"log"
	"net/http"
	"strconv"
	"time"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/classify"
	"github.com/retryhttp/retryhttp/githubretry"
	"github.com/retryhttp/retryhttp/retryhttptest"
)

func ExampleClassifier() {
	limited := retryhttptest.Respond(http.StatusForbidden, http.Header{"Retry-After": {"1"}},
		`{"message":"You have exceeded a secondary rate limit."}`)
	srv := retryhttptest.NewServer(nil, retryhttptest.First(1, limited))
	defer srv.Close()

	client := &http.Client{Transport: retryhttp.New(
		retryhttp.WithClassifier(classify.First(githubretry.Classifier(), classify.Default())),
		retryhttp.WithOnRetry(func(e retryhttp.RetryEvent) {
			fmt.Printf("attempt %d: %d, waiting at least %v\n", e.Attempt, e.StatusCode, e.Verdict.RetryAfter)
		}),
	)}
	status, attempts := get(client, srv.URL)
	fmt.Println(status, "after", attempts, "attempts")
	// Output:
	// attempt 1: 403, waiting at least 1s
	// 200 after 2 attempts
}

func ExampleClassifier_primary() {
	reset := strconv.FormatInt(time.Now().Add(40*time.Minute).Unix(), 10)
	srv := retryhttptest.NewServer(nil, retryhttptest.Respond(http.StatusForbidden,
		http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {reset}},
		`{"message":"API rate limit exceeded."}`))
	defer srv.Close()

	client := &http.Client{Transport: retryhttp.New(
		retryhttp.WithClassifier(classify.First(githubretry.Classifier(), classify.Default())),
	)}
	start := time.Now()
	resp, err := client.Get(srv.URL)
	if err != nil {
		log.Fatal(err)
	}
	resp.Body.Close()
	fmt.Println(resp.StatusCode, "after", retryhttp.Attempts(resp), "attempt; waited:", time.Since(start) > time.Second)
	// Output:
	// 403 after 1 attempt; waited: false
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
