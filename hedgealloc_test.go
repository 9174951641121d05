// The race detector makes sync.Pool drop items at random, so the trace
// hooks a hedged call takes from their pool cannot be counted under it:
// this file is built without it, and CI runs it so (see .ci/run).

//go:build !race

package retryhttp

import (
	"math"
	"net/http"
	"testing"

	"github.com/retryhttp/retryhttp/internal/hedging"
	"github.com/retryhttp/retryhttp/internal/wire"
	"github.com/stretchr/testify/assert"
)

// TestHedgingSuccessPathAllocations pins the cost of a GET that is
// answered before its hedge delay: one allocation, for the call, which
// holds the first attempt's request, whose context a hedge would have to
// cancel, and its trace; over a base that unwraps to an *http.Transport,
// the attempt is traced, so that net/http's resends of it are counted,
// and its context makes the Done channel that net/http's Transport asks
// for, to which the context it derives is tied by two more (the context
// package's function and stop, where it would otherwise start a
// goroutine): four.
func TestHedgingSuccessPathAllocations(t *testing.T) {
	for _, base := range []struct {
		name string
		rt   http.RoundTripper
		max  float64
	}{{"stub", newStub(), 1}, {"traced", tracedStub{newStub()}, 4}} {
		t.Run(base.name, func(t *testing.T) {
			tr := New(WithBase(base.rt), WithHedging())
			get, _ := http.NewRequest(http.MethodGet, "http://svc.test/items", nil)
			for range hedging.DefaultMinSamples {
				tr.RoundTrip(get) // the quantile is known from here on
			}
			assert.LessOrEqual(t, addedAllocs(t, tr, get, func() {}), base.max)
		})
	}
}

// BenchmarkHedgeFirstApart measures what a hedged GET answered before its
// delay costs when its host sends first attempts apart (after a hedge won
// over an HTTP/1 first attempt) against when it does not, over the
// default base's path, each request made anew:
//
//	go test -run '^$' -bench HedgeFirstApart .
func BenchmarkHedgeFirstApart(b *testing.B) {
	for _, apart := range []bool{false, true} {
		name := "together"
		if apart {
			name = "apart"
		}
		b.Run(name, func(b *testing.B) {
			tr := New(WithBase(tracedStub{newStub()}), WithHedging())
			ctx := b.Context()
			for range hedging.DefaultMinSamples {
				resp, _ := tr.RoundTrip(newGet(ctx)) // the quantile is known from here on
				resp.Body.Close()
			}
			if apart {
				tr.hedge.Table().Host(wire.RequestKey(newGet(ctx))).KeepApart(math.MaxInt32)
			}
			sendEach(b, tr, newGet, ctx)
		})
	}
}
