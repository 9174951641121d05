package classify_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"syscall"

	"github.com/retryhttp/retryhttp/classify"
)

// response returns a response with code and the given header pairs.
func response(code int, kv ...string) *http.Response {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return &http.Response{StatusCode: code, Header: h, Body: http.NoBody}
}

func ExampleDefault() {
	c := classify.Default()
	req, _ := http.NewRequest(http.MethodGet, "http://api.test/items", nil)
	for _, resp := range []*http.Response{
		response(200),
		response(404),
		response(503),
		response(503, "X-Should-Retry", "false"),
	} {
		fmt.Println(resp.StatusCode, resp.Header.Get("X-Should-Retry"), c.Classify(req, resp, nil).Decision)
	}
	fmt.Println(c.Classify(req, nil, syscall.ECONNRESET).Decision)
	// Output:
	// 200  don't retry
	// 404  don't retry
	// 503  retry
	// 503 false don't retry
	// retry
}

func ExampleStatus() {
	c := classify.Status()
	req, _ := http.NewRequest(http.MethodGet, "http://api.test/items", nil)
	for _, code := range []int{200, 404, 429, 501, 503, 504} {
		v := c.Classify(req, response(code), nil)
		fmt.Printf("%d: %s throttle=%v timeout=%v\n", code, v.Decision, v.Throttle, v.Timeout)
	}
	// Output:
	// 200: don't retry throttle=false timeout=false
	// 404: don't retry throttle=false timeout=false
	// 429: retry throttle=true timeout=false
	// 501: don't retry throttle=false timeout=false
	// 503: retry throttle=false timeout=false
	// 504: retry throttle=false timeout=true
}

func ExampleErrors() {
	c := classify.Errors()
	req, _ := http.NewRequest(http.MethodGet, "http://api.test/items", nil)
	for _, err := range []error{
		syscall.ECONNRESET,
		syscall.ECONNREFUSED,
		context.Canceled,
		errors.New("unsupported protocol scheme"),
	} {
		fmt.Printf("%v: %s\n", err, c.Classify(req, nil, err).Decision)
	}
	// Output:
	// connection reset by peer: retry
	// connection refused: retry
	// context canceled: don't retry
	// unsupported protocol scheme: abstain
}

func ExampleContext() {
	c := classify.Context()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.test/items", nil)
	fmt.Println(c.Classify(req, response(503), nil).Decision)
	cancel() // the caller gave up
	fmt.Println(c.Classify(req, response(503), nil).Decision)
	// Output:
	// abstain
	// don't retry
}

func ExampleShouldRetry() {
	c := classify.ShouldRetry()
	req, _ := http.NewRequest(http.MethodGet, "http://api.test/items", nil)
	fmt.Println(c.Classify(req, response(503, "X-Should-Retry", "false"), nil).Decision)
	fmt.Println(c.Classify(req, response(409, "X-Should-Retry", "true"), nil).Decision)
	fmt.Println(c.Classify(req, response(503), nil).Decision)
	// Output:
	// don't retry
	// retry
	// abstain
}

func ExampleIdempotencyConflict() {
	c := classify.IdempotencyConflict()
	req, _ := http.NewRequest(http.MethodPost, "http://api.test/charges", nil)
	req.Header.Set("Idempotency-Key", "8e03978e-40d5-43e8-bc93-6894a57f9324")
	v := c.Classify(req, response(http.StatusConflict), nil)
	fmt.Println("409:", v.Decision, "throttle:", v.Throttle)
	fmt.Println("422:", c.Classify(req, response(http.StatusUnprocessableEntity), nil).Decision)
	// Output:
	// 409: retry throttle: true
	// 422: don't retry
}

func ExampleStatuses() {
	// Never retry a 500 of this API, whatever the default chain says.
	c := classify.First(classify.Statuses(classify.DontRetry, 500), classify.Default())
	req, _ := http.NewRequest(http.MethodGet, "http://api.test/items", nil)
	fmt.Println(500, c.Classify(req, response(500), nil).Decision)
	fmt.Println(502, c.Classify(req, response(502), nil).Decision)
	// Output:
	// 500 don't retry
	// 502 retry
}
