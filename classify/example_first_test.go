package classify_test

import (
	"fmt"
	"net/http"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/classify"
)

func ExampleFirst() {
	// Treat 500 from this API as final, and everything else as by default.
	classifier := classify.First(classify.Statuses(classify.DontRetry, http.StatusInternalServerError), classify.Default())
	client := &http.Client{Transport: retryhttp.New(retryhttp.WithClassifier(classifier))}
	_ = client
	req, _ := http.NewRequest(http.MethodGet, "http://api.example/", nil)
	for _, code := range []int{500, 502, 404} {
		v := classifier.Classify(req, &http.Response{StatusCode: code}, nil)
		fmt.Println(code, v.Decision)
	}
	// Output:
	// 500 don't retry
	// 502 retry
	// 404 don't retry
}
