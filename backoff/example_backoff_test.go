package backoff_test

import (
	"fmt"
	"time"

	"github.com/retryhttp/retryhttp/backoff"
)

// The schedule of a backoff that starts at 3 s and grows by half each retry.
// A Transport would wrap it in a jitter, such as FullJitter.
func ExampleExponentialBy() {
	b := backoff.ExponentialBy(3*time.Second, 1.5, time.Minute)
	var prev time.Duration
	for n := 1; n <= 5; n++ {
		d := b(n, prev, 0.5) // a schedule ignores prev and the random number
		fmt.Printf("retry %d: %v\n", n, d)
		prev = d
	}
	// Output:
	// retry 1: 3s
	// retry 2: 4.5s
	// retry 3: 6.75s
	// retry 4: 10.125s
	// retry 5: 15.1875s
}
