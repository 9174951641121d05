package redisbudget

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/budget"
	"github.com/retryhttp/retryhttp/throttle"
)

// stubBase answers every request with a canned 200, allocating nothing.
type stubBase struct{ resp http.Response }

func (s *stubBase) RoundTrip(*http.Request) (*http.Response, error) { return &s.resp, nil }

func newStub() *stubBase {
	return &stubBase{resp: http.Response{StatusCode: 200, Header: http.Header{}, Body: http.NoBody}}
}

// drained is a bucket arithmetic that one retry empties, and that a
// benchmark's successes cannot refill, so that every success refunds.
var drained = []budget.Option{budget.Capacity(1e9), budget.RetryCost(1e9)}

// BenchmarkSuccess measures a GET that succeeds at once through a
// Transport over an in-memory stub, with the local per-host budget and with
// a Redis budget: for a host whose bucket is full (the steady state of
// healthy traffic, in which a Redis budget keeps no state for the host), and
// for a host whose bucket is being refilled (every success refunds, locally
// for the Redis budget).
func BenchmarkSuccess(b *testing.B) {
	s := startRedis(b)
	c := newClient(b, s)
	req := getReq(b, "https://api.example/items")
	local := budget.NewPerHost(drained...)
	shared := newRedisBudget(b, c, "bench-refilling", WithBucket(drained...))
	for _, budget := range []budget.Budget{local, shared} {
		if _, err := budget.Withdraw(req, failed); err != nil {
			b.Fatal(err)
		}
	}
	for _, bc := range []struct {
		name   string
		budget budget.Budget
	}{
		{"local-full", budget.NewPerHost()},
		{"redis-full", newRedisBudget(b, c, "bench")},
		{"local-refilling", local},
		{"redis-refilling", shared},
	} {
		t := retryhttp.New(retryhttp.WithBase(newStub()), retryhttp.WithBudget(bc.budget))
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				resp, err := t.RoundTrip(req)
				if err != nil || resp.StatusCode != 200 {
					b.Fatal(resp, err)
				}
			}
		})
		b.Run(bc.name+"-parallel", func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					t.RoundTrip(req)
				}
			})
		})
	}
}

// BenchmarkDeposit measures the budget's part of a success alone, on all
// CPUs at once, for a host whose bucket is being refilled.
func BenchmarkDeposit(b *testing.B) {
	s := startRedis(b)
	req := getReq(b, "https://api.example/items")
	local := budget.NewPerHost(drained...)
	shared := newRedisBudget(b, newClient(b, s), "bench-deposit", WithBucket(drained...))
	for _, budget := range []budget.Budget{local, shared} {
		if _, err := budget.Withdraw(req, failed); err != nil {
			b.Fatal(err)
		}
	}
	for _, bc := range []struct {
		name   string
		budget budget.Budget
	}{
		{"local-refilling", local},
		{"redis-refilling", shared},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					bc.budget.Deposit(req, 0)
				}
			})
		})
	}
}

// BenchmarkWithdraw measures a retry's withdraw against a local
// redis-server, one round trip each, and reports the median and the 99th
// percentile.
func BenchmarkWithdraw(b *testing.B) {
	s := startRedis(b)
	budget := newRedisBudget(b, newClient(b, s), "bench-withdraw",
		WithBucket(budget.Capacity(1e12)), WithTimeout(time.Second))
	req := getReq(b, "https://api.example/items")
	if _, err := budget.Withdraw(req, failed); err != nil { // connects, loads the script
		b.Fatal(err)
	}
	b.ReportAllocs()
	lat := make([]time.Duration, 0, 1024)
	for b.Loop() {
		start := time.Now()
		_, err := budget.Withdraw(req, failed)
		lat = append(lat, time.Since(start))
		if err != nil {
			b.Fatal(err)
		}
	}
	if !budget.Status().Shared {
		b.Fatal("fell back:", budget.Status().LastError)
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
}

// BenchmarkExchange measures a ThrottleStore's exchange against a local
// redis-server, one script each: a process's counts of 10 hosts sent, and
// the fleet's sums returned, with Redis holding those 10 hosts, or the 1024
// it keeps at most. Exchanges from all CPUs at once show what Redis takes
// of many processes, each exchanging twice a step.
func BenchmarkExchange(b *testing.B) {
	s := startRedis(b)
	ctx := context.Background()
	batch := make([]throttle.Counts, 10)
	for i := range batch {
		batch[i] = throttle.Counts{Scheme: "https", Host: fmt.Sprintf("api%d.example", i), Attempts: 5, Accepted: 3, Refused: 1}
	}
	for _, bc := range []struct {
		name  string
		hosts int // held in Redis
	}{
		{"10-hosts", 10},
		{"1024-hosts", DefaultMaxHosts},
	} {
		ts := NewThrottleStore(newClient(b, s), "bench-"+bc.name, WithTimeout(time.Second))
		fill := make([]throttle.Counts, bc.hosts-len(batch))
		for i := range fill {
			fill[i] = throttle.Counts{Scheme: "https", Host: fmt.Sprintf("other%d.example", i), Attempts: 1}
		}
		// Counts the other hosts anew, before they leave the window.
		refill := func(b *testing.B) {
			if _, err := ts.Exchange(ctx, 10*time.Second, append(fill, batch...)); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
		}
		b.Run(bc.name, func(b *testing.B) {
			refill(b)
			b.ReportAllocs()
			for b.Loop() {
				sums, err := ts.Exchange(ctx, 10*time.Second, batch)
				if err != nil || len(sums) != bc.hosts {
					b.Fatal(len(sums), err)
				}
			}
		})
		b.Run(bc.name+"-parallel", func(b *testing.B) {
			refill(b)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if sums, err := ts.Exchange(ctx, 10*time.Second, batch); err != nil || len(sums) != bc.hosts {
						b.Error(len(sums), err)
						return
					}
				}
			})
		})
	}
}
