package retryhttptest_test

import (
	"fmt"
	"io"
	"log"
	"net/http"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/retryhttptest"
)

func ExampleNewBalancer() {
	// Five instances of a service behind a balancer that pins each
	// connection to one of them, as a Kubernetes Service does; the first
	// instance answers 503 to everything.
	bad := retryhttptest.NewServer(nil, retryhttptest.Status(http.StatusServiceUnavailable))
	defer bad.Close()
	backends := []string{bad.URL}
	for range 4 {
		s := retryhttptest.NewServer(nil, retryhttptest.Pass())
		defer s.Close()
		backends = append(backends, s.URL)
	}
	lb := retryhttptest.NewBalancer(20, backends...)
	defer lb.Close()

	base := &http.Transport{}
	defer base.CloseIdleConnections()
	client := &http.Client{Transport: retryhttp.New(retryhttp.WithBase(base))}
	ok := 0
	for range 30 {
		resp, err := client.Get(lb.URL)
		if err != nil {
			log.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			ok++
		}
	}
	// The first connection landed on the failing instance: its retry left
	// it for a new connection, which the client then kept.
	fmt.Println("succeeded:", ok, "of 30")
	fmt.Println("attempts at the failing instance:", bad.Attempts())
	fmt.Println("connections:", lb.TotalConnections())
	// Output:
	// succeeded: 30 of 30
	// attempts at the failing instance: 1
	// connections: 2
}
