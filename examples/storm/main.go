// Command storm sends a burst of clients at a local service that sheds load,
// once for each retry strategy, and shows the load each strategy put on the
// service, how many requests succeeded, and when the attempts arrived: as a
// histogram in the terminal and as an SVG file.
//
//	go run ./examples/storm [-clients 200] [-capacity 10] [-svg storm.svg]
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/backoff"
	"github.com/retryhttp/retryhttp/retryhttptest"
)

// bucket is the width of one histogram bar.
const bucket = 20 * time.Millisecond

// The retry schedule all retrying strategies share: 4 attempts, backoff
// doubling from 100 ms.
const (
	attempts = 4
	base     = 100 * time.Millisecond
)

func main() {
	clients := flag.Int("clients", 200, "clients that send one request each, all at once")
	capacity := flag.Int("capacity", 10, "requests the service serves per 20 ms; it answers the rest 503")
	svg := flag.String("svg", "storm.svg", "file to write the arrival histograms to")
	flag.Parse()
	if *clients < 1 || *capacity < 1 {
		log.Fatal("storm: -clients and -capacity must be positive")
	}
	if err := run(os.Stdout, *clients, *capacity, *svg); err != nil {
		log.Fatal(err)
	}
}

// A strategy is a way for a client to make its request.
type strategy struct {
	name string
	// do makes one request with client and reports whether it succeeded.
	do func(client *http.Client, req *http.Request) bool
	// wrap builds the strategy's transport over a shared base.
	wrap func(base http.RoundTripper) http.RoundTripper
}

var strategies = []strategy{
	{name: "plain client, no retries", do: once},
	{name: "naive retries: 4 attempts, 100 ms doubling, no jitter", do: naive},
	{name: "retryhttp: 4 attempts, 100 ms doubling, full jitter, no budget", do: once,
		wrap: jittered(retryhttp.WithoutBudget())},
	{name: "retryhttp: the same, with its default retry budget", do: once, wrap: jittered()},
}

// jittered returns a retryhttp Transport over b with the shared schedule,
// full jitter and the extra options.
func jittered(extra ...retryhttp.Option) func(b http.RoundTripper) http.RoundTripper {
	return func(b http.RoundTripper) http.RoundTripper {
		opts := append([]retryhttp.Option{retryhttp.WithBase(b), retryhttp.WithMaxAttempts(attempts),
			retryhttp.WithBackoff(backoff.FullJitter(backoff.Exponential(base, 10*time.Second)))}, extra...)
		return retryhttp.New(opts...)
	}
}

// A result is what one strategy did to the service.
type result struct {
	strategy
	load      int // attempts the service received
	succeeded int
	counts    []int // arrivals per bucket
	retryPeak int   // most retries arriving in one bucket
}

func run(w io.Writer, clients, capacity int, svgPath string) error {
	fmt.Fprintf(w, "storm: %d clients send one request each, all at once, to a service that\n", clients)
	fmt.Fprintf(w, "serves %d requests per 20 ms and answers the rest 503 Service Unavailable.\n\n", capacity)

	results := make([]result, len(strategies))
	for i, s := range strategies {
		results[i] = storm(s, clients, capacity)
	}

	fmt.Fprintf(w, "%-64s %5s %14s %8s %11s\n", "strategy", "load", "amplification", "success", "retry peak")
	for _, r := range results {
		fmt.Fprintf(w, "%-64s %5d %13.2fx %7.0f%% %11d\n", r.name, r.load,
			float64(r.load)/float64(clients), 100*float64(r.succeeded)/float64(clients), r.retryPeak)
	}
	fmt.Fprintln(w, "\nload: requests the service received; amplification: load per client request;")
	fmt.Fprintln(w, "retry peak: the most retries that arrived in one 20 ms interval.")

	ss := make([]series, len(results))
	for i, r := range results {
		ss[i] = series{name: r.name, counts: r.counts}
	}
	fmt.Fprintln(w, "\nArrivals at the service per 20 ms, without jitter and with full jitter:")
	if err := drawTerminal(w, bucket, 50, ss[1], ss[2]); err != nil {
		return err
	}
	if svgPath == "" {
		return nil
	}
	if err := writeFile(svgPath, func(f io.Writer) error { return writeSVG(f, bucket, ss...) }); err != nil {
		return err
	}
	abs, err := filepath.Abs(svgPath)
	if err != nil {
		abs = svgPath
	}
	fmt.Fprintf(w, "\nAll four strategies' arrivals are drawn in %s; open it in a browser.\n", abs)
	return nil
}

// storm sends clients requests at once to a fresh service through s, and
// returns what the service saw.
func storm(s strategy, clients, capacity int) result {
	shed := &shedder{capacity: capacity, counts: map[time.Duration]int{}}
	srv := retryhttptest.NewServer(nil, retryhttptest.Func(shed.fault), retryhttptest.KeyHeader("X-Request-Id"))
	defer srv.Close()

	base := &http.Transport{MaxIdleConnsPerHost: clients}
	defer base.CloseIdleConnections()
	var rt http.RoundTripper = base
	if s.wrap != nil {
		rt = s.wrap(base)
	}
	client := &http.Client{Transport: rt}

	var succeeded atomic.Int64
	var ready, wg sync.WaitGroup
	start := make(chan struct{})
	ready.Add(clients)
	for i := range clients {
		req, err := http.NewRequest(http.MethodGet, srv.URL, nil)
		if err != nil {
			panic(err)
		}
		req.Header.Set("X-Request-Id", strconv.Itoa(i))
		wg.Go(func() {
			ready.Done()
			<-start
			if s.do(client, req) {
				succeeded.Add(1)
			}
		})
	}
	ready.Wait()
	began := time.Now()
	shed.begin(began)
	close(start)
	wg.Wait()

	var retries []time.Time
	for _, r := range srv.Requests() {
		retries = append(retries, r.Arrivals[1:]...)
	}
	return result{strategy: s, load: srv.Attempts(), succeeded: int(succeeded.Load()),
		counts: bucketize(began, srv.Arrivals(), bucket), retryPeak: peakOf(bucketize(began, retries, bucket))}
}

// once makes one request through the client's transport.
func once(client *http.Client, req *http.Request) bool {
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// naive retries as many hand-written loops do: at fixed, doubling delays,
// so that clients that failed together retry together.
func naive(client *http.Client, req *http.Request) bool {
	delay := base
	for n := 1; ; n++ {
		if once(client, req) {
			return true
		}
		if n == attempts {
			return false
		}
		time.Sleep(delay)
		delay *= 2
	}
}

// shedder serves capacity requests in each 20 ms window since begin, and
// answers the rest 503, as a service shedding load does.
type shedder struct {
	mu       sync.Mutex
	began    time.Time
	capacity int
	counts   map[time.Duration]int
}

var unavailable = retryhttptest.Status(http.StatusServiceUnavailable)

func (s *shedder) begin(t time.Time) {
	s.mu.Lock()
	s.began = t
	s.mu.Unlock()
}

func (s *shedder) fault(string, int) retryhttptest.Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	window := time.Since(s.began).Truncate(bucket)
	s.counts[window]++
	if s.counts[window] > s.capacity {
		return unavailable
	}
	return retryhttptest.Pass()
}

func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	return errors.Join(write(f), f.Close())
}
