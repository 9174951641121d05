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
