// Command scenarios runs retryhttp, go-retryablehttp, the AWS SDK for Go
// v2's retryer, failsafe-go, a naive retry loop and a plain transport
// against loopback servers in trouble, and prints one markdown table per
// scenario.
//
// From the bench directory (or from the repository root with go -C bench):
//
//	go run ./cmd/scenarios            # every scenario, about two minutes on 2 CPUs, and 8.5 more for the quota ones
//	go run ./cmd/scenarios -quick     # smaller sizes
//	go run ./cmd/scenarios -only outage,herd
//	go run ./cmd/scenarios -only rescue    # which failures each library rescues, about 10 seconds
//	go run ./cmd/scenarios -only deadline  # a chain of five services with a deadline at the top, about 40 seconds
//	go run ./cmd/scenarios -only throughput # a 256 MiB download, plain and through retryhttp
//	go run ./cmd/scenarios -only quota # open-loop clients against a server's quota, about 3.5 minutes
//	go run ./cmd/scenarios -only quota-burst # 300 keyed POSTs at once against a quota, about a minute
//	go run ./cmd/scenarios -only quota-fleet # 20 processes pacing one quota through Redis, about 4 minutes
//	go run ./cmd/scenarios -only tls  # transient, outage and a bad backend over TLS, handshakes counted, about a minute
//	go run ./cmd/scenarios -overhead  # the overhead benchmarks, as ratios
//
// The memory scenario runs each library in a child process: the command
// runs itself again with -memory-child. The quota-fleet scenario runs its
// fleet's members so, with -quota-fleet-member, and starts a redis-server
// (it must be installed).
package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/bench"
	"github.com/retryhttp/retryhttp/bench/peers"
	"github.com/retryhttp/retryhttp/bench/scenario"
)

func main() {
	testing.Init()
	quick := flag.Bool("quick", false, "smaller sizes")
	only := flag.String("only", "", "comma-separated scenarios to run (default all): "+names())
	seed := flag.Uint64("seed", 1, "seed of the transient scenario's faults")
	overhead := flag.Bool("overhead", false, "run the overhead benchmarks and print them as ratios to the bare stub, instead of the scenarios")
	benchtime := flag.Duration("benchtime", 500*time.Millisecond, "with -overhead, the time each benchmark runs")
	runs := flag.Int("runs", 3, "with -overhead, the runs of each benchmark, of which the median is printed")
	child := flag.String(scenario.MemoryChildFlag, "", "internal: measure the memory of one library")
	url := flag.String("memory-url", "", "internal: the memory child's server")
	size := flag.Int64("memory-size", 0, "internal: the memory child's body size")
	member := flag.String(scenario.FleetMemberFlag, "", "internal: run one member of the quota fleet")
	flag.Parse()

	p := scenario.DefaultParams()
	if *quick {
		p = scenario.QuickParams()
	}
	p.Seed = *seed

	switch {
	case *child != "":
		if err := scenario.MemoryChild(os.Stdout, *child, *url, *size, p.Fast); err != nil {
			fmt.Fprintln(os.Stderr, "memory child:", err)
			os.Exit(1)
		}
	case *member != "":
		if err := scenario.RunFleetMember(*member, os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "quota fleet member:", err)
			os.Exit(1)
		}
	case *overhead:
		if err := flag.Set("test.benchtime", benchtime.String()); err != nil {
			panic(err)
		}
		printOverhead(os.Stdout, *runs)
	default:
		if err := run(os.Stdout, p, *only); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
}

func names() string {
	var ns []string
	for _, s := range scenario.All() {
		ns = append(ns, s.Name)
	}
	for _, s := range withChildren {
		ns = append(ns, s.name)
	}
	return strings.Join(ns, ",")
}

// withChildren are the scenarios that run copies of this command as child
// processes, given its path: memory runs each library in one of its own,
// and quota-fleet is a fleet of them.
var withChildren = []struct {
	name string
	run  func(ctx context.Context, p scenario.Params, self string) []scenario.Table
}{
	{"memory", scenario.Memory},
	{"quota-fleet", scenario.QuotaFleet},
}

func run(w io.Writer, p scenario.Params, only string) error {
	want := map[string]bool{}
	for _, n := range strings.Split(only, ",") {
		if n = strings.TrimSpace(n); n != "" {
			if !slices.Contains(strings.Split(names(), ","), n) {
				return fmt.Errorf("unknown scenario %q (have %s)", n, names())
			}
			want[n] = true
		}
	}
	selected := func(n string) bool { return len(want) == 0 || want[n] }

	fmt.Fprintf(w, "## Scenarios\n\n%s, %s/%s, GOMAXPROCS %d, %s.\n\nParameters: %s.\n\n",
		runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.GOMAXPROCS(0),
		time.Now().UTC().Format("2006-01-02"), p)
	start := time.Now()
	for _, s := range scenario.All() {
		if !selected(s.Name) {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), limit(s.Name))
		t0 := time.Now()
		tables := s.Run(ctx, p)
		cancel()
		for _, t := range tables {
			t.Fprint(w)
		}
		fmt.Fprintf(os.Stderr, "%s: %v\n", s.Name, time.Since(t0).Round(time.Millisecond))
	}
	for _, s := range withChildren {
		if !selected(s.name) {
			continue
		}
		self, err := os.Executable()
		if err != nil {
			return err
		}
		t0 := time.Now()
		for _, t := range s.run(context.Background(), p, self) {
			t.Fprint(w)
		}
		fmt.Fprintf(os.Stderr, "%s: %v\n", s.name, time.Since(t0).Round(time.Millisecond))
	}
	fmt.Fprintf(os.Stderr, "total: %v\n", time.Since(start).Round(time.Millisecond))
	return nil
}

// limit is how long the scenario called name may run: 3 minutes, and 8
// for quota, whose 16 runs take about 13 s each.
func limit(name string) time.Duration {
	if name == "quota" {
		return 8 * time.Minute
	}
	return 3 * time.Minute
}

// printOverhead runs the overhead benchmarks with testing.Benchmark, each
// runs times, and prints the median run of each, with its ratio to the bare
// stub (over the stub that stands for the default base, to that stub
// alone; over loopback, to the plain transport).
func printOverhead(w io.Writer, runs int) {
	fmt.Fprintf(w, "## Overhead\n\n%s, %s/%s, GOMAXPROCS %d, %s; the median of %d runs of each benchmark.\n\n",
		runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.GOMAXPROCS(0),
		time.Now().UTC().Format("2006-01-02"), runs)
	fmt.Fprintln(w, "| request | library | ns/op | B/op | allocs/op | added ns/op | × plain |")
	fmt.Fprintln(w, "| --- | --- | --- | --- | --- | --- | --- |")
	row := func(request, name string, r testing.BenchmarkResult, plain float64) {
		ns := nsPerOp(r)
		fmt.Fprintf(w, "| %s | %s | %s | %d | %d | %s | %s |\n", request, name, num(ns), r.AllocedBytesPerOp(),
			r.AllocsPerOp(), num(ns-plain), strconv.FormatFloat(ns/plain, 'f', 2, 64))
	}
	for _, c := range bench.OverheadCases() {
		var plain float64
		for _, lib := range peers.All() {
			r := median(runs, func(b *testing.B) { c.Run(b, lib.New(bench.NewStub(), bench.OverheadConfig)) })
			name := lib.Name
			if lib.Name == peers.Plain {
				plain, name = nsPerOp(r), "plain (bare stub)"
			}
			row(c.Name+", stub", name, r, plain)
		}
		// Over the stub that stands for the default base, whose own use
		// of each request's context (as net/http's) is its baseline.
		r := median(runs, func(b *testing.B) { c.Run(b, bench.TracedStub{Stub: bench.NewStub()}) })
		traced := nsPerOp(r)
		row(c.Name+", stub", "plain (bare stub, used as net/http's Transport uses a request)", r, traced)
		r = median(runs, func(b *testing.B) {
			c.Run(b, peers.NewRetryHTTP(bench.TracedStub{Stub: bench.NewStub()}, bench.OverheadConfig))
		})
		row(c.Name+", stub", "retryhttp, as over its default base", r, traced)
		if strings.HasPrefix(c.Name, "GET") {
			r := median(runs, func(b *testing.B) {
				c.Run(b, retryhttp.New(retryhttp.WithBase(bench.TracedStub{Stub: bench.NewStub()}), retryhttp.WithHedging()))
			})
			row(c.Name+", stub", "retryhttp `WithHedging()`, as over its default base", r, traced)
		}
	}
	var plain float64
	for _, lib := range peers.All() {
		r := median(runs, func(b *testing.B) { bench.BenchLoopback(b, lib) })
		if lib.Name == peers.Plain {
			plain = nsPerOp(r)
		}
		row("GET, loopback", lib.Name, r, plain)
	}
	fmt.Fprintln(w)
}

func nsPerOp(r testing.BenchmarkResult) float64 {
	return float64(r.T.Nanoseconds()) / float64(r.N)
}

// median runs f runs times and returns the run of median time per op.
func median(runs int, f func(b *testing.B)) testing.BenchmarkResult {
	rs := make([]testing.BenchmarkResult, max(1, runs))
	for i := range rs {
		rs[i] = testing.Benchmark(f)
	}
	slices.SortFunc(rs, func(a, b testing.BenchmarkResult) int { return cmp.Compare(nsPerOp(a), nsPerOp(b)) })
	return rs[len(rs)/2]
}

func num(ns float64) string {
	if ns < 100 && ns > -100 {
		return strconv.FormatFloat(ns, 'f', 1, 64)
	}
	return strconv.FormatFloat(ns, 'f', 0, 64)
}
