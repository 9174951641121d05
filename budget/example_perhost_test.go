package budget_test

import (
	"fmt"
	"log"
	"net/http"
	"time"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/backoff"
	"github.com/retryhttp/retryhttp/budget"
	"github.com/retryhttp/retryhttp/retryhttptest"
)

func ExampleNewPerHost() {
	down := retryhttptest.NewServer(nil, retryhttptest.Status(http.StatusServiceUnavailable))
	defer down.Close()
	flaky := retryhttptest.NewServer(nil, retryhttptest.First(1, retryhttptest.Status(http.StatusServiceUnavailable)),
		retryhttptest.KeyHeader("X-Request-Id"))
	defer flaky.Close()

	// Each host has its own bucket of 10 tokens; a retry costs 5. The host
	// that is down spends its own bucket, not the flaky host's.
	hosts := budget.NewPerHost(budget.Capacity(10))
	client := &http.Client{Transport: retryhttp.New(
		retryhttp.WithBudget(hosts),
		retryhttp.WithBackoff(backoff.Constant(time.Millisecond)),
	)}
	for range 4 {
		if resp, err := client.Get(down.URL); err == nil {
			resp.Body.Close()
		}
	}
	req, _ := http.NewRequest(http.MethodGet, flaky.URL, nil)
	req.Header.Set("X-Request-Id", "1")
	resp, err := client.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	resp.Body.Close()
	fmt.Println("down: 4 requests,", down.Attempts(), "attempts")
	fmt.Println("flaky:", resp.StatusCode, "after", retryhttp.Attempts(resp), "attempts")
	fmt.Println("hosts with a bucket:", hosts.Hosts())
	// Output:
	// down: 4 requests, 6 attempts
	// flaky: 200 after 2 attempts
	// hosts with a bucket: 2
}
