package retryhttp_test

import (
	"fmt"
	"log"
	"net/http"
	"strconv"
	"time"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/httptest"
)

// DynamoDB throttles with a 400 that names ThrottlingException or
// ProvisionedThroughputExceededException in X-Amzn-ErrorType. In front of
// the default chain, AWSErrorClassifier retries it, paced as a throttle;
// other 400s stay final.
func ExampleAWSErrorClassifier() {
	throttled := httptest.Respond(http.StatusBadRequest, http.Header{
		"X-Amzn-Errortype": {"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException:"},
	}, `{"message":"The level of configured provisioned throughput for the table was exceeded."}`)
	srv := httptest.NewServer(nil, httptest.First(1, throttled))
	defer srv.Close()

	client := &http.Client{Transport: retryhttp.New(
		retryhttp.WithClassifier(retryhttp.Chain{retryhttp.AWSErrorClassifier(), retryhttp.DefaultClassifier()}),
		// Throttled retries wait from 1 s by default; shorter here.
		retryhttp.WithThrottleBackoff(retryhttp.Constant(10*time.Millisecond)),
		retryhttp.WithOnRetry(func(e retryhttp.RetryEvent) {
			fmt.Printf("attempt %d: %d, throttle: %t\n", e.Attempt, e.StatusCode, e.Verdict.Throttle)
		}),
	)}
	status, attempts := get(client, srv.URL) // a GET: resendable by its method
	fmt.Println(status, "after", attempts, "attempts")
	// Output:
	// attempt 1: 400, throttle: true
	// 200 after 2 attempts
}

// The code as the AWS SDKs read it: namespace and URI dropped.
func ExampleAWSErrorCode() {
	h := http.Header{}
	h.Set("X-Amzn-ErrorType", "com.amazonaws.dynamodb.v20120810#ThrottlingException:http://internal.amazon.com/coral/")
	fmt.Println(retryhttp.AWSErrorCode(h))
	// Output:
	// ThrottlingException
}

// GitHub answers a request over its secondary rate limit with a 403 and
// Retry-After; GitHubRateLimitClassifier retries it after that wait. A 403
// without rate-limit headers (a missing permission) stays final.
func ExampleGitHubRateLimitClassifier() {
	limited := httptest.Respond(http.StatusForbidden, http.Header{"Retry-After": {"1"}},
		`{"message":"You have exceeded a secondary rate limit."}`)
	srv := httptest.NewServer(nil, httptest.First(1, limited))
	defer srv.Close()

	client := &http.Client{Transport: retryhttp.New(
		retryhttp.WithClassifier(retryhttp.Chain{retryhttp.GitHubRateLimitClassifier(), retryhttp.DefaultClassifier()}),
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

// A primary rate limit names its reset in epoch seconds; one further away
// than the Retry-After limit (a minute by default) is not waited for, and
// the 403 comes back at once.
func ExampleGitHubRateLimitClassifier_primary() {
	reset := strconv.FormatInt(time.Now().Add(40*time.Minute).Unix(), 10)
	srv := httptest.NewServer(nil, httptest.Respond(http.StatusForbidden,
		http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {reset}},
		`{"message":"API rate limit exceeded."}`))
	defer srv.Close()

	client := &http.Client{Transport: retryhttp.New(
		retryhttp.WithClassifier(retryhttp.Chain{retryhttp.GitHubRateLimitClassifier(), retryhttp.DefaultClassifier()}),
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
