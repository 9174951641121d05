package awsretry_test

import (
	"fmt"
	"hash/crc32"
	"io"
	"log"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/awsretry"
	"github.com/retryhttp/retryhttp/backoff"
	"github.com/retryhttp/retryhttp/classify"
	"github.com/retryhttp/retryhttp/retryhttptest"
)

func ExampleClassifier() {
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
		retryhttp.WithClassifier(classify.First(awsretry.Classifier(), classify.Default())),
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

func ExampleResponseErrorCode() {
	const doc = `<?xml version="1.0" encoding="UTF-8"?>
<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message><RequestId>4442587FB7D0A2F9</RequestId><HostId>x</HostId></Error>`
	resp := &http.Response{
		StatusCode: http.StatusServiceUnavailable,
		Header:     http.Header{"Content-Type": {"application/xml"}},
		Body:       io.NopCloser(strings.NewReader(doc)),
	}
	fmt.Println(awsretry.ResponseErrorCode(resp))
	b, _ := io.ReadAll(resp.Body)
	fmt.Println(string(b) == doc)
	// Output:
	// SlowDown
	// true
}

func ExampleErrorCode() {
	h := http.Header{}
	h.Set("X-Amzn-ErrorType", "com.amazonaws.dynamodb.v20120810#ThrottlingException:http://internal.amazon.com/coral/")
	fmt.Println(awsretry.ErrorCode(h))
	// Output:
	// ThrottlingException
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
