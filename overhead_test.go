package retryhttp

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/retryhttp/retryhttp/deadline"
)

// A costCase is a configuration users run, and the request it is asked
// for, made anew on each call as callers make their requests.
type costCase struct {
	name string
	opts []Option
	// request makes the call's request, under ctx.
	request func(ctx context.Context) *http.Request
	// deadline gives the call's context a deadline.
	deadline bool
}

var costPayload = bytes.Repeat([]byte("p"), 1024)

func newGet(ctx context.Context) *http.Request {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://svc.test/items", nil)
	return req
}

func newPost(key string) func(ctx context.Context) *http.Request {
	return func(ctx context.Context) *http.Request {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://svc.test/items", bytes.NewReader(costPayload))
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		return req
	}
}

// costCases are the configurations of the cost table: each is measured
// against the bare base sent the same request, made the same way.
func costCases() []costCase {
	hook := func(RetryEvent) {}
	return []costCase{
		{name: "defaults-GET", request: newGet},
		{name: "keyed-POST", request: newPost("k-1")},
		{name: "keyless-POST", request: newPost("")},
		{name: "logger-GET", opts: []Option{WithLogger(errorLogger)}, request: newGet},
		{name: "retry-hook-GET", opts: []Option{WithOnRetry(hook)}, request: newGet},
		{name: "hedging-GET", opts: []Option{WithHedging()}, request: newGet},
		{name: "attempt-timeout-GET", opts: []Option{WithAttemptTimeout(time.Minute)}, request: newGet},
		{name: "deadline-GET", request: newGet, deadline: true},
		{name: "deadline-header-GET", opts: []Option{WithDeadlineHeader(deadline.GRPCTimeout)}, request: newGet, deadline: true},
		{name: "deadline-4-headers-GET", opts: []Option{WithDeadlineHeader(allFormats...)}, request: newGet, deadline: true},
	}
}

// BenchmarkCost measures each configuration of costCases over a stub
// (stub) and over the path of the default base (traced: a base that
// unwraps to an *http.Transport, whose attempts are traced as needed),
// with the bare base beside it (bare), each request made anew. The added
// cost of a configuration is its time less bare's, in the same run.
func BenchmarkCost(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	for _, c := range costCases() {
		callCtx := context.Background()
		if c.deadline {
			callCtx = ctx
		}
		for _, base := range []struct {
			name string
			rt   func() http.RoundTripper
		}{
			{"stub", func() http.RoundTripper { return newStub() }},
			{"traced", func() http.RoundTripper { return tracedStub{newStub()} }},
		} {
			for _, tr := range []struct {
				name string
				rt   http.RoundTripper
			}{
				{"bare", base.rt()},
				{"retryhttp", New(append([]Option{WithBase(base.rt())}, c.opts...)...)},
			} {
				b.Run(c.name+"/"+base.name+"/"+tr.name, func(b *testing.B) { sendEach(b, tr.rt, c.request, callCtx) })
			}
		}
	}
}

// BenchmarkCostTable prints the cost each configuration of costCases adds
// to a request that succeeds at once, over the bare base sent the same
// request: the median of 7 runs of each, the bare base and the
// configuration alternating, so that a noisy machine slows both alike.
// Each run sends as many requests as -benchtime counts (at most a
// million); the table is printed once.
//
//	go test -run '^$' -bench CostTable -benchtime 200000x .
func BenchmarkCostTable(b *testing.B) {
	if b.N > 1 {
		costOnce.Do(func() { fmt.Print(costTableOf(min(b.N, 1_000_000))) })
	}
	for range b.N { // the framework's second call, b.N a count, is the table's
	}
}

var costOnce sync.Once

// costTableOf measures the table BenchmarkCostTable prints, each run
// sending n requests.
func costTableOf(n int) string {
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	const runs = 7
	var out strings.Builder
	out.WriteString("| configuration | added ns, stub | allocs | added ns, default base's path | allocs |\n| --- | --- | --- | --- | --- |\n")
	for _, c := range costCases() {
		callCtx := context.Background()
		if c.deadline {
			callCtx = ctx
		}
		fmt.Fprintf(&out, "| %s |", c.name)
		for _, base := range []func() http.RoundTripper{
			func() http.RoundTripper { return newStub() },
			func() http.RoundTripper { return tracedStub{newStub()} },
		} {
			bare, tr := base(), New(append([]Option{WithBase(base())}, c.opts...)...)
			var added []float64
			var allocs float64
			for range runs {
				bareNs, bareAllocs := measure(bare, c.request, callCtx, n)
				ns, a := measure(tr, c.request, callCtx, n)
				added = append(added, ns-bareNs)
				allocs = a - bareAllocs
			}
			slices.Sort(added)
			fmt.Fprintf(&out, " %.0f | %d |", added[runs/2], max(int(math.Round(allocs)), 0))
		}
		out.WriteString("\n")
	}
	return out.String()
}

// measure sends n requests made by request under ctx through rt, and
// returns the time and the allocations each took.
func measure(rt http.RoundTripper, request func(context.Context) *http.Request, ctx context.Context, n int) (ns, allocs float64) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	for range n {
		resp, err := rt.RoundTrip(request(ctx))
		if err != nil {
			panic(err)
		}
		resp.Body.Close()
	}
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	return float64(took.Nanoseconds()) / float64(n), float64(after.Mallocs-before.Mallocs) / float64(n)
}

// sendEach sends b.N requests made by request under ctx through rt.
func sendEach(b *testing.B, rt http.RoundTripper, request func(context.Context) *http.Request, ctx context.Context) {
	b.ReportAllocs()
	for b.Loop() {
		resp, err := rt.RoundTrip(request(ctx))
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
	}
}
