package retryhttp_test

import (
	"fmt"
	"net/http"
	"time"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/hedge"
	"github.com/retryhttp/retryhttp/retryhttptest"
)

func ExampleWithHedging() {
	// The first attempt of each request to reach the server hangs, as a
	// request to a slow replica would; the others answer at once.
	srv := retryhttptest.NewServer(nil, retryhttptest.First(1, retryhttptest.Hang()))
	defer srv.Close()

	// The default delay is the host's 95th-percentile latency, known after
	// 100 requests; a fixed one keeps the example short. Two attempts: the
	// first and one hedge.
	client := &http.Client{Transport: retryhttp.New(
		retryhttp.WithMaxAttempts(2),
		retryhttp.WithHedging(hedge.Delay(20*time.Millisecond)),
		retryhttp.WithOnHedge(func(e retryhttp.HedgeEvent) { fmt.Println("hedge: attempt", e.Attempt) }),
	)}
	resp, err := client.Get(srv.URL + "/items/1")
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	// Which attempt won, base.Attempt(resp.Request.Context()) says:
	// usually the hedge, but the first attempt when the hedge overtook it
	// on the way to the server.
	fmt.Printf("%d after %d attempts\n", resp.StatusCode, retryhttp.Attempts(resp))
	fmt.Println("overlapping at the server:", srv.Request("GET /items/1").Overlapping)
	// Output:
	// hedge: attempt 2
	// 200 after 2 attempts
	// overlapping at the server: 1
}
