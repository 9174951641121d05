package bench

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp/bench/peers"
)

// BenchmarkOverhead sends each OverheadCase through each library over the
// same Stub; the plain row is the bare Stub. The scenarios command's
// -overhead flag runs the same benchmarks and prints each as a ratio to
// the bare Stub.
func BenchmarkOverhead(b *testing.B) {
	for _, c := range OverheadCases() {
		for _, lib := range peers.All() {
			b.Run(c.Name+"/"+lib.Name, func(b *testing.B) {
				c.Run(b, lib.New(NewStub(), OverheadConfig))
			})
		}
		b.Run(c.Name+"/retryhttp-default-base", func(b *testing.B) {
			c.Run(b, peers.NewRetryHTTP(TracedStub{NewStub()}, OverheadConfig))
		})
	}
}

// BenchmarkLoopback sends bodiless GETs to a loopback server through each
// library.
func BenchmarkLoopback(b *testing.B) {
	for _, lib := range peers.All() {
		b.Run("GET/"+lib.Name, func(b *testing.B) { BenchLoopback(b, lib) })
	}
}

// TestOverheadCasesSucceed sends every case a few times through every
// library, so that go test checks the benchmarks' setup.
func TestOverheadCasesSucceed(t *testing.T) {
	for _, c := range OverheadCases() {
		for _, lib := range peers.All() {
			t.Run(c.Name+"/"+lib.Name, func(t *testing.T) {
				send := c.Prepare(lib.New(NewStub(), OverheadConfig))
				for range 3 {
					require.NoError(t, send())
				}
			})
		}
	}
}

// TestRetryHTTPAddsNoAllocation pins the target that retryhttp adds no
// allocation to the success path of a bodiless GET.
func TestRetryHTTPAddsNoAllocation(t *testing.T) {
	lib, ok := peers.ByName(peers.RetryHTTP)
	require.True(t, ok)
	send := OverheadCases()[0].Prepare(lib.New(NewStub(), OverheadConfig))
	allocs := testing.AllocsPerRun(100, func() { require.NoError(t, send()) })
	require.Zero(t, allocs, "allocations per bodiless GET through retryhttp")
}

// BenchmarkThrottlers sends bodiless GETs over the Stub through retryhttp
// with and without adaptive throttling and through failsafe-go's retry
// policy with its adaptive throttler and with its circuit breaker.
func BenchmarkThrottlers(b *testing.B) {
	for _, lib := range peers.Throttlers() {
		b.Run("GET/"+lib.Name, func(b *testing.B) {
			OverheadCases()[0].Run(b, lib.New(NewStub(), OverheadConfig))
		})
	}
}
