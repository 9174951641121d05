package classify_test

import (
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"time"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/backoff"
	"github.com/retryhttp/retryhttp/classify"
	"github.com/retryhttp/retryhttp/retryhttptest"
)

func ExamplePeek() {
	busy := classify.Func(func(req *http.Request, resp *http.Response, err error) classify.Verdict {
		if resp == nil || resp.StatusCode != http.StatusBadRequest {
			return classify.Verdict{}
		}
		doc, complete := classify.Peek(resp) // at most 8 KiB, at most 100 ms
		var e struct{ Error string }
		if complete && json.Unmarshal(doc, &e) == nil && e.Error == "busy" {
			return classify.Verdict{Decision: classify.Retry}
		}
		return classify.Verdict{}
	})
	srv := retryhttptest.NewServer(nil, retryhttptest.Sequence(
		retryhttptest.Respond(http.StatusBadRequest, http.Header{"Content-Type": {"application/json"}}, `{"error":"busy"}`),
		retryhttptest.Respond(http.StatusBadRequest, http.Header{"Content-Type": {"application/json"}}, `{"error":"invalid name"}`),
	))
	defer srv.Close()

	client := &http.Client{Transport: retryhttp.New(
		retryhttp.WithClassifier(classify.First(busy, classify.Default())),
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
