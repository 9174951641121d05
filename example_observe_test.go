package retryhttp_test

import (
	"fmt"
	"net/http"
	"time"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/backoff"
	"github.com/retryhttp/retryhttp/retryhttptest"
)

func ExampleWithOnGiveUp() {
	srv := retryhttptest.NewServer(nil, retryhttptest.Status(http.StatusServiceUnavailable)) // down for good
	defer srv.Close()

	// Count give-ups by reason, as a metric would; the hooks add up, so
	// that an instrumentation and the caller can each have theirs.
	gaveUp := map[retryhttp.GiveUpReason]int{}
	client := &http.Client{Transport: retryhttp.New(
		retryhttp.WithBackoff(backoff.Constant(time.Millisecond)),
		retryhttp.WithOnGiveUp(func(e retryhttp.GiveUpEvent) { gaveUp[e.Reason]++ }),
		retryhttp.WithOnGiveUp(func(e retryhttp.GiveUpEvent) {
			fmt.Printf("gave up after attempt %d (%d): %s\n", e.Attempt, e.StatusCode, e.Reason)
		}),
	)}
	status, _ := get(client, srv.URL)
	fmt.Println(status, gaveUp[retryhttp.GiveUpAttemptsExhausted])
	// Output:
	// gave up after attempt 3 (503): attempts exhausted
	// 503 1
}
