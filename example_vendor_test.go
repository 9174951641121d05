package retryhttp_test

import (
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"log"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/backoff"
	"github.com/retryhttp/retryhttp/retryhttptest"
)

// DynamoDB throttles with a 400 whose JSON body names
// ProvisionedThroughputExceededException in its __type, and no header
// does. In front of the default chain, AWSErrorClassifier reads the code
// from the body, leaving the body intact, and retries the request, paced
// as a throttle; other 400s stay final.
func ExampleAWSErrorClassifier() {
	const doc = `{"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException",` +
		`"message":"The level of configured provisioned throughput for the table was exceeded."}`
	throttled := retryhttptest.Respond(http.StatusBadRequest, http.Header{
		"Content-Type":     {"application/x-amz-json-1.0"},
		"X-Amzn-Requestid": {"N4UIOV1N0TSSC6KJ0HDD5QVFK7VV4KQNSO5AEMVJF66Q9ASUAAJG"},
		"X-Amz-Crc32":      {strconv.FormatUint(uint64(crc32.ChecksumIEEE([]byte(doc))), 10)},
	}, doc)
	srv := retryhttptest.NewServer(nil, retryhttptest.First(1, throttled))
	defer srv.Close()

	client := &http.Client{Transport: retryhttp.New(
		retryhttp.WithClassifier(retryhttp.Chain{retryhttp.AWSErrorClassifier(), retryhttp.DefaultClassifier()}),
		// Throttled retries wait from 1 s by default; shorter here.
		retryhttp.WithThrottleBackoff(backoff.Constant(10*time.Millisecond)),
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

// S3 names its error in the XML body of the response; AWSResponseErrorCode
// reads it there when no header carries it, and the body still reads in
// full afterwards.
func ExampleAWSResponseErrorCode() {
	const doc = `<?xml version="1.0" encoding="UTF-8"?>
<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message><RequestId>4442587FB7D0A2F9</RequestId><HostId>x</HostId></Error>`
	resp := &http.Response{
		StatusCode: http.StatusServiceUnavailable,
		Header:     http.Header{"Content-Type": {"application/xml"}},
		Body:       io.NopCloser(strings.NewReader(doc)),
	}
	fmt.Println(retryhttp.AWSResponseErrorCode(resp))
	b, _ := io.ReadAll(resp.Body)
	fmt.Println(string(b) == doc)
	// Output:
	// SlowDown
	// true
}

// Google APIs report a rate limit as a 403 whose JSON body gives the
// reason; GoogleAPIErrorClassifier retries it as a throttle, where the
// default chain would return it.
func ExampleGoogleAPIErrorClassifier() {
	limited := retryhttptest.Respond(http.StatusForbidden, http.Header{"Content-Type": {"application/json; charset=UTF-8"}},
		`{"error":{"errors":[{"domain":"usageLimits","reason":"userRateLimitExceeded","message":"User Rate Limit Exceeded"}],`+
			`"code":403,"message":"User Rate Limit Exceeded"}}`)
	srv := retryhttptest.NewServer(nil, retryhttptest.First(1, limited))
	defer srv.Close()

	client := &http.Client{Transport: retryhttp.New(
		retryhttp.WithClassifier(retryhttp.Chain{retryhttp.GoogleAPIErrorClassifier(), retryhttp.DefaultClassifier()}),
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

// A classifier of your own reads an API's error document with PeekBody,
// which leaves the body intact for the caller: here, an API that names a
// transient failure in the JSON body of a 400.
func ExamplePeekBody() {
	busy := retryhttp.ClassifierFunc(func(req *http.Request, resp *http.Response, err error) retryhttp.Verdict {
		if resp == nil || resp.StatusCode != http.StatusBadRequest {
			return retryhttp.Verdict{}
		}
		doc, complete := retryhttp.PeekBody(resp) // at most 8 KiB, at most 100 ms
		var e struct{ Error string }
		if complete && json.Unmarshal(doc, &e) == nil && e.Error == "busy" {
			return retryhttp.Verdict{Decision: retryhttp.Retry}
		}
		return retryhttp.Verdict{}
	})
	srv := retryhttptest.NewServer(nil, retryhttptest.Sequence(
		retryhttptest.Respond(http.StatusBadRequest, http.Header{"Content-Type": {"application/json"}}, `{"error":"busy"}`),
		retryhttptest.Respond(http.StatusBadRequest, http.Header{"Content-Type": {"application/json"}}, `{"error":"invalid name"}`),
	))
	defer srv.Close()

	client := &http.Client{Transport: retryhttp.New(
		retryhttp.WithClassifier(retryhttp.Chain{busy, retryhttp.DefaultClassifier()}),
		retryhttp.WithBackoff(backoff.Constant(time.Millisecond)),
	)}
	resp, err := client.Get(srv.URL)
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, string(b), "after", retryhttp.Attempts(resp), "attempts")
	// Output:
	// 400 {"error":"invalid name"} after 2 attempts
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
	limited := retryhttptest.Respond(http.StatusForbidden, http.Header{"Retry-After": {"1"}},
		`{"message":"You have exceeded a secondary rate limit."}`)
	srv := retryhttptest.NewServer(nil, retryhttptest.First(1, limited))
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
	srv := retryhttptest.NewServer(nil, retryhttptest.Respond(http.StatusForbidden,
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
