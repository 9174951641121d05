package tail

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-cleanhttp"

	"github.com/retryhttp/retryhttp/bench"
)

// TestRun runs every client through each scenario on a small scale and
// checks what does not depend on timing: every request answered, none
// failing but in the outage, hedges within their cap, and the tables
// printed.
func TestRun(t *testing.T) {
	for _, h2 := range []bool{false, true} {
		p := DefaultParams()
		p.Requests, p.Concurrency, p.Warmup = 400, 8, 20
		p.Slow, p.Overloaded = 20*time.Millisecond, 15*time.Millisecond
		p.HTTP2 = h2
		run(t, p)
	}
}

func run(t *testing.T, p Params) {
	for _, mode := range []Mode{HeavyTail, Overload, Outage} {
		var results []Result
		for _, c := range Clients() {
			r, err := Run(p, mode, c)
			if err != nil {
				t.Fatal(err)
			}
			if want := map[bool]string{false: "HTTP/1.1", true: "HTTP/2.0"}[p.HTTP2]; r.Proto != want {
				t.Errorf("%s, mode %d: the server saw %s, want %s", c.Name, mode, r.Proto, want)
			}
			if r.Errors != r.Canceled {
				t.Errorf("%s, mode %d: %d requests ended in an error", c.Name, mode, r.Errors-r.Canceled)
			}
			if r.Canceled != 0 && !cancelsUnderOthers(c, mode, p) {
				t.Errorf("%s, mode %d: %d requests ended in context.Canceled", c.Name, mode, r.Canceled)
			}
			if want := 0; mode != Outage && r.Failures != want {
				t.Errorf("%s, mode %d: %d responses not 200", c.Name, mode, r.Failures)
			}
			// The cap: 5% of the requests, plus 10 saved before, plus what
			// concurrent requests may earn past those 10.
			if strings.HasPrefix(c.Name, "retryhttp") && float64(r.Hedges) > 0.05*float64(p.Requests)+10+1 {
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

// cancelsUnderOthers reports whether c, in mode, may fail a request with
// context.Canceled that nothing cancelled: net/http puts an HTTP/1.1
// connection whose response has no body (the outage's 503) back in its pool
// before it hands the response over, and a cancel of that attempt in the
// instant between closes the connection under the request that took it
// next, which fails with the cancel's cause. failsafe-go cancels a hedge or
// its first attempt whatever state it is in, and meets this. retryhttp lets
// no retryable response win while an attempt is in flight, so it cancels
// none in the outage, and the other modes' responses have bodies.
func cancelsUnderOthers(c Client, mode Mode, p Params) bool {
	return strings.HasPrefix(c.Name, "failsafe-go") && mode == Outage && !p.HTTP2
}

// BenchmarkFastGET sends bodiless GETs that are answered at once to a
// loopback server through each client of the scenarios, so that what
// hedging costs a request that never needs a hedge is seen beside a real
// round trip.
func BenchmarkFastGET(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer srv.Close()
	for _, c := range Clients() {
		b.Run(c.Name, func(b *testing.B) {
			base := cleanhttp.DefaultPooledTransport()
			defer base.CloseIdleConnections()
			var hedges atomic.Int64
			bench.GetLoop(b, c.New(base, &hedges), srv.URL)
			b.ReportMetric(float64(hedges.Load())/float64(b.N), "hedges/op")
		})
	}
}
