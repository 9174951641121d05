package server_test

import (
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/backoff"
	"github.com/retryhttp/retryhttp/deadline"
	"github.com/retryhttp/retryhttp/server"
)

func ExampleHandler() {
	// C is down. B calls C through retryhttp and is wrapped in Handler; the
	// client calls B through retryhttp too.
	var callsToC atomic.Int32
	c := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		callsToC.Add(1)
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	defer c.Close()

	toC := &http.Client{Transport: retryhttp.New(retryhttp.WithBackoff(backoff.Constant(0)))}
	b := httptest.NewServer(server.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, _ := http.NewRequestWithContext(r.Context(), http.MethodGet, c.URL, nil)
		resp, err := toC.Do(req)
		if err != nil || resp.StatusCode >= 500 {
			http.Error(w, "dependency failed", http.StatusBadGateway)
			return
		}
		resp.Body.Close()
	})))
	defer b.Close()

	client := &http.Client{Transport: retryhttp.New(retryhttp.WithBackoff(backoff.Constant(0)))}
	resp, err := client.Get(b.URL)
	if err != nil {
		log.Fatal(err)
	}
	resp.Body.Close()
	fmt.Println(resp.StatusCode, "X-Should-Retry:", resp.Header.Get("X-Should-Retry"))
	fmt.Println("attempts at B:", retryhttp.Attempts(resp), "calls at C:", callsToC.Load())
	// Output:
	// 502 X-Should-Retry: false
	// attempts at B: 1 calls at C: 3
}

func ExampleHandler_deadline() {
	// A backend prints the deadline it is sent.
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Println("backend sent", roughly(r.Header.Get("Grpc-Timeout")))
	}))
	defer backend.Close()

	// A service takes its callers' deadline, and passes what is left of it
	// on through its client.
	client := &http.Client{Transport: retryhttp.New(retryhttp.WithDeadlineHeader(deadline.GRPCTimeout))}
	var ran atomic.Int32
	service := httptest.NewServer(server.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ran.Add(1)
		until, _ := r.Context().Deadline()
		fmt.Println("service has", time.Until(until).Round(100*time.Millisecond))
		req, _ := http.NewRequestWithContext(r.Context(), http.MethodGet, backend.URL, nil)
		resp, err := client.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		resp.Body.Close()
	}), server.Deadline(deadline.GRPCTimeout)))
	defer service.Close()

	for _, timeout := range []string{"800m", "0n"} {
		req, _ := http.NewRequest(http.MethodGet, service.URL, nil)
		req.Header.Set("Grpc-Timeout", timeout)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			log.Fatal(err)
		}
		resp.Body.Close()
		fmt.Printf("%s: %d X-Should-Retry=%q\n", timeout, resp.StatusCode, resp.Header.Get("X-Should-Retry"))
	}
	fmt.Println("handler ran", ran.Load(), "time")
	// Output:
	// service has 800ms
	// backend sent about 800ms
	// 800m: 200 X-Should-Retry=""
	// 0n: 504 X-Should-Retry="false"
	// handler ran 1 time
}

func ExampleOnMalformedDeadline() {
	var malformed atomic.Int64
	h := server.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, ok := r.Context().Deadline()
		fmt.Println("handler runs; deadline:", ok)
	}),
		server.Deadline(deadline.ConnectTimeout),
		server.OnMalformedDeadline(func(_ *http.Request, f deadline.Format, v string) {
			malformed.Add(1)
			fmt.Printf("malformed %s: %q\n", f, v)
		}),
	)
	srv := httptest.NewServer(h)
	defer srv.Close()

	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	req.Header.Set("Connect-Timeout-Ms", "soon")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	resp.Body.Close()
	fmt.Println(resp.StatusCode, "malformed values:", malformed.Load())
	// Output:
	// malformed Connect-Timeout-Ms: "soon"
	// handler runs; deadline: false
	// 200 malformed values: 1
}

func ExampleDeadline() {
	// A service that lets its callers give it at most a second, and keeps
	// 100 ms of their time for the way back.
	srv := httptest.NewServer(server.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		until, _ := r.Context().Deadline()
		fmt.Println("handler has", time.Until(until).Round(100*time.Millisecond))
	}),
		server.Deadline(deadline.GRPCTimeout, deadline.EnvoyTimeout),
		server.MaxDeadline(time.Second),
		server.DeadlineMargin(100*time.Millisecond),
	))
	defer srv.Close()

	for _, h := range []http.Header{
		{"Grpc-Timeout": {"600m"}},
		{"Grpc-Timeout": {"2H"}}, // capped
		{"Grpc-Timeout": {"800m"}, "X-Envoy-Expected-Rq-Timeout-Ms": {"400"}}, // the shortest
	} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
		req.Header = h
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			log.Fatal(err)
		}
		resp.Body.Close()
	}
	// Output:
	// handler has 500ms
	// handler has 1s
	// handler has 300ms
}

// roughly reads a deadline header's value, in grpc-timeout's format or in
// milliseconds, and rounds it to a tenth of a second, so that the output
// of the examples does not depend on how fast they run.
func roughly(v string) string {
	if v == "" {
		return "none"
	}
	unit := "ms"
	if last := v[len(v)-1]; last < '0' || last > '9' {
		v, unit = v[:len(v)-1], map[byte]string{'H': "h", 'M': "m", 'S': "s", 'm': "ms", 'u': "us", 'n': "ns"}[last]
	}
	d, err := time.ParseDuration(v + unit)
	if err != nil || unit == "" {
		return "malformed"
	}
	return "about " + d.Round(100*time.Millisecond).String()
}
