// The race detector makes sync.Pool drop items at random, so the timers a
// hedged call takes from its pool cannot be counted under it: this file is
// built without it, and CI runs it so (see .ci/run).

//go:build !race

package retryhttp

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestHedgingSuccessPathAllocations pins the cost of a GET that is
// answered before its hedge delay: one allocation, for the first attempt's
// request, whose context a hedge would have to cancel.
func TestHedgingSuccessPathAllocations(t *testing.T) {
	tr := New(WithBase(newStub()), WithHedging())
	get, _ := http.NewRequest(http.MethodGet, "http://svc.test/items", nil)
	for range defaultHedgeMinSamples {
		tr.RoundTrip(get) // the quantile is known from here on
	}
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := tr.RoundTrip(get); err != nil {
			t.Fatal(err)
		}
	})
	assert.LessOrEqual(t, allocs, 1.0)
}
