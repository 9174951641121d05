package retryhttp_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/deadline"
)

func ExampleWithDeadlineHeader() {
	// The server prints the deadline headers it receives.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, h := range []string{"Grpc-Timeout", "Connect-Timeout-Ms", "X-Deadline-Ms"} {
			fmt.Printf("%s: %s\n", h, roughly(r.Header.Get(h)))
		}
	}))
	defer srv.Close()

	client := &http.Client{Transport: retryhttp.New(retryhttp.WithDeadlineHeader(
		deadline.GRPCTimeout, deadline.ConnectTimeout, deadline.Milliseconds("X-Deadline-Ms"),
	))}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	if err != nil {
		log.Fatal(err)
	}
	resp, err := client.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	resp.Body.Close()
	// Output:
	// Grpc-Timeout: about 2s
	// Connect-Timeout-Ms: about 2s
	// X-Deadline-Ms: about 2s
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

func ExampleNewHandler() {
	// A backend prints the deadline it is sent.
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Println("backend sent", roughly(r.Header.Get("Grpc-Timeout")))
	}))
	defer backend.Close()

	// A service takes its callers' deadline, and passes what is left of it
	// on through its client.
	client := &http.Client{Transport: retryhttp.New(retryhttp.WithDeadlineHeader(deadline.GRPCTimeout))}
	var ran atomic.Int32
	service := httptest.NewServer(retryhttp.NewHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ran.Add(1)
		deadline, _ := r.Context().Deadline()
		fmt.Println("service has", time.Until(deadline).Round(100*time.Millisecond))
		req, _ := http.NewRequestWithContext(r.Context(), http.MethodGet, backend.URL, nil)
		resp, err := client.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		resp.Body.Close()
	}), retryhttp.HandlerDeadline(deadline.GRPCTimeout)))
	defer service.Close()

	for _, timeout := range []string{"800m", "0n"} {
		req, _ := http.NewRequest(http.MethodGet, service.URL, nil)
		req.Header.Set("Grpc-Timeout", timeout)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			log.Fatal(err)
		}
		resp.Body.Close()
		fmt.Printf("%s: %d X-Should-Retry=%q\n", timeout, resp.StatusCode, resp.Header.Get(retryhttp.ShouldRetryHeader))
	}
	fmt.Println("handler ran", ran.Load(), "time")
	// Output:
	// service has 800ms
	// backend sent about 800ms
	// 800m: 200 X-Should-Retry=""
	// 0n: 504 X-Should-Retry="false"
	// handler ran 1 time
}

func ExampleHandlerOnMalformedDeadline() {
	var malformed atomic.Int64
	h := retryhttp.NewHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, ok := r.Context().Deadline()
		fmt.Println("handler runs; deadline:", ok)
	}),
		retryhttp.HandlerDeadline(deadline.ConnectTimeout),
		retryhttp.HandlerOnMalformedDeadline(func(_ *http.Request, f deadline.Format, v string) {
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

func ExampleErrNoTimeLeft() {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { calls.Add(1) }))
	defer srv.Close()

	client := &http.Client{Transport: retryhttp.New(retryhttp.WithDeadlineHeader(deadline.EnvoyTimeout))}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Microsecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	_, err := client.Do(req)
	fmt.Println(errors.Is(err, retryhttp.ErrNoTimeLeft), errors.Is(err, context.DeadlineExceeded), "server calls:", calls.Load())
	// Output:
	// true true server calls: 0
}

func ExampleHandlerDeadline() {
	// A service that lets its callers give it at most a second, and keeps
	// 100 ms of their time for the way back.
	srv := httptest.NewServer(retryhttp.NewHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		deadline, _ := r.Context().Deadline()
		fmt.Println("handler has", time.Until(deadline).Round(100*time.Millisecond))
	}),
		retryhttp.HandlerDeadline(deadline.GRPCTimeout, deadline.EnvoyTimeout),
		retryhttp.HandlerMaxDeadline(time.Second),
		retryhttp.HandlerDeadlineMargin(100*time.Millisecond),
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
