package tail

import (
	"strings"
	"testing"
	"time"
)

// TestRun runs every client through each scenario on a small scale and
// checks what does not depend on timing: every request answered, none
// failing but in the outage, hedges within their cap, and the tables
// printed.
func TestRun(t *testing.T) {
	p := DefaultParams()
	p.Requests, p.Concurrency, p.Warmup = 400, 8, 20
	p.Slow, p.Overloaded = 20*time.Millisecond, 15*time.Millisecond
	for _, mode := range []Mode{HeavyTail, Overload, Outage} {
		var results []Result
		for _, c := range Clients() {
			r, err := Run(p, mode, c)
			if err != nil {
				t.Fatal(err)
			}
			if r.Errors != 0 {
				t.Errorf("%s, mode %d: %d requests ended in an error", c.Name, mode, r.Errors)
			}
			if want := 0; mode != Outage && r.Failures != want {
				t.Errorf("%s, mode %d: %d responses not 200", c.Name, mode, r.Failures)
			}
			if strings.HasPrefix(c.Name, "retryhttp") && float64(r.Hedges) > 0.05*float64(p.Requests+p.Warmup)+2*10 {
				t.Errorf("%s, mode %d: %d hedges, over the cap", c.Name, mode, r.Hedges)
			}
			results = append(results, r)
		}
		var b strings.Builder
		Table(&b, mode, results)
		if strings.Count(b.String(), "\n") != len(results)+2 {
			t.Errorf("table:\n%s", b.String())
		}
	}
}
