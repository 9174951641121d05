package retryhttp_test

import (
	"fmt"
	"net/http"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/classify"
)

func ExampleNewBucket() {
	budget := retryhttp.NewBucket(retryhttp.BucketCapacity(10)) // retries cost 5
	req, err := http.NewRequest(http.MethodGet, "http://localhost/", nil)
	if err != nil {
		panic(err)
	}
	tokens := func(n retryhttp.Tokens) float64 { return float64(n) / float64(retryhttp.Token) }

	failed := classify.Verdict{Decision: classify.Retry}
	for i := 1; i <= 3; i++ {
		spent, err := budget.Withdraw(req, failed)
		fmt.Printf("retry %d: took %v, err %v, balance %v\n", i, tokens(spent), err, tokens(budget.Balance()))
	}
	// The second retry succeeds and puts back what it cost.
	budget.Deposit(req, 5*retryhttp.Token)
	fmt.Printf("after a successful retry: balance %v\n", tokens(budget.Balance()))
	// Output:
	// retry 1: took 5, err <nil>, balance 5
	// retry 2: took 5, err <nil>, balance 0
	// retry 3: took 0, err retryhttp: retry budget exhausted, balance 0
	// after a successful retry: balance 5
}
