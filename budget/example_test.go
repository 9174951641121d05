package budget_test

import (
	"fmt"
	"net/http"

	"github.com/retryhttp/retryhttp/budget"
	"github.com/retryhttp/retryhttp/classify"
)

func ExampleNewBucket() {
	bucket := budget.NewBucket(budget.Capacity(10)) // retries cost 5
	req, err := http.NewRequest(http.MethodGet, "http://localhost/", nil)
	if err != nil {
		panic(err)
	}
	tokens := func(n budget.Millitokens) float64 { return float64(n) / float64(budget.Token) }

	failed := classify.Verdict{Decision: classify.Retry}
	for i := 1; i <= 3; i++ {
		spent, err := bucket.Withdraw(req, failed)
		fmt.Printf("retry %d: took %v, err %v, balance %v\n", i, tokens(spent), err, tokens(bucket.Balance()))
	}
	// The second retry succeeds and puts back what it cost.
	bucket.Deposit(req, 5*budget.Token)
	fmt.Printf("after a successful retry: balance %v\n", tokens(bucket.Balance()))
	// Output:
	// retry 1: took 5, err <nil>, balance 5
	// retry 2: took 5, err <nil>, balance 0
	// retry 3: took 0, err retryhttp: retry budget exhausted, balance 0
	// after a successful retry: balance 5
}
