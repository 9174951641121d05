package classify_test

import (
	"fmt"
	"time"

	"github.com/retryhttp/retryhttp/classify"
)

// A Retry-After header holds either a number of seconds or a date. Pass the
// time the response arrived as now.
func ExampleParseRetryAfter() {
	now := time.Date(2026, time.March, 4, 12, 0, 0, 0, time.UTC)
	for _, value := range []string{
		"120",
		"Wed, 04 Mar 2026 12:00:30 GMT",
		"Wed, 04 Mar 2026 11:00:00 GMT", // already past
		"0",
		"soon",
	} {
		d, ok := classify.ParseRetryAfter(value, now)
		fmt.Printf("%-31q %v %v\n", value, d, ok)
	}
	// Output:
	// "120"                           2m0s true
	// "Wed, 04 Mar 2026 12:00:30 GMT" 30s true
	// "Wed, 04 Mar 2026 11:00:00 GMT" 0s false
	// "0"                             0s false
	// "soon"                          0s false
}
