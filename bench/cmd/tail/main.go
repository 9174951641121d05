// Command tail measures hedging against a loopback server whose latency is
// heavy-tailed: retryhttp with a fixed delay and with its default quantile
// delay, and failsafe-go's hedgepolicy with a fixed delay and with its
// quantile delay, over the same base transport, beside no hedging. It
// prints three Markdown tables: the heavy tail (latency percentiles and
// extra requests), an overload in which the server turns slow for every
// request halfway (extra requests in each half), and an outage in which
// every answer is a 503 (hedges sent).
//
// From the bench directory:
//
//	go run ./cmd/tail                 # 5000 GETs at 16 concurrent per client and scenario, about a minute
//	go run ./cmd/tail -requests 1000  # quicker
//	go run ./cmd/tail -h2             # over HTTP/2 without TLS
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"slices"
	"strings"

	"github.com/retryhttp/retryhttp/bench/tail"
)

func main() {
	p := tail.DefaultParams()
	flag.IntVar(&p.Requests, "requests", p.Requests, "requests per client and scenario")
	flag.IntVar(&p.Concurrency, "concurrency", p.Concurrency, "requests in flight")
	flag.IntVar(&p.Warmup, "warmup", p.Warmup, "unmeasured requests each client sends first, at the same concurrency")
	flag.Uint64Var(&p.Seed, "seed", p.Seed, "seed of the server's latencies")
	flag.BoolVar(&p.HTTP2, "h2", false, "speak HTTP/2 (without TLS) to the server")
	only := flag.String("only", "heavy,overload,outage", "comma-separated scenarios to run")
	flag.Parse()
	if p.Requests < 2 || p.Concurrency < 1 {
		log.Fatal("tail: -requests must be at least 2 and -concurrency at least 1")
	}
	for _, s := range []struct {
		mode  tail.Mode
		name  string
		title string
	}{
		{tail.HeavyTail, "heavy", fmt.Sprintf("Heavy tail: %d GETs at %d concurrent, after %d unmeasured; the server answers in %v, or for %.0f%% of attempts in %v to %v.",
			p.Requests, p.Concurrency, p.Warmup, p.Fast, 100*p.Tail, p.Slow, 2*p.Slow)},
		{tail.Overload, "overload", fmt.Sprintf("Overload: the same, but from the %dth request on the server answers every attempt in %v.",
			p.Requests/2, p.Overloaded)},
		{tail.Outage, "outage", fmt.Sprintf("Outage: %d GETs at %d concurrent; every attempt gets a 503 at once.", p.Requests, p.Concurrency)},
	} {
		if !slices.Contains(strings.Split(*only, ","), s.name) {
			continue
		}
		var results []tail.Result
		for _, c := range tail.Clients() {
			r, err := tail.Run(p, s.mode, c)
			if err != nil {
				log.Fatal(err)
			}
			results = append(results, r)
		}
		fmt.Println(s.title)
		fmt.Println()
		tail.Table(os.Stdout, s.mode, results)
		fmt.Println()
	}
}
