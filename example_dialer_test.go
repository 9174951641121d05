package retryhttp_test

import (
	"fmt"
	"log"
	"net/http"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/retryhttptest"
)

func ExampleDialer() {
	srv := retryhttptest.NewServer(nil, retryhttptest.First(1, retryhttptest.Status(http.StatusServiceUnavailable)))
	defer srv.Close()

	// An SDK's transport, or your own: one line makes a retry dial the
	// addresses that failed it last.
	base := &http.Transport{}
	base.DialContext = retryhttp.NewDialer().DialContext
	defer base.CloseIdleConnections()

	client := &http.Client{Transport: retryhttp.New(retryhttp.WithBase(base),
		retryhttp.WithOnRetry(func(e retryhttp.RetryEvent) {
			fmt.Println("retrying a", e.StatusCode, "from the instance at", e.Peer.Addr())
		}))}
	resp, err := client.Get(srv.URL)
	if err != nil {
		log.Fatal(err)
	}
	resp.Body.Close()
	fmt.Println("status:", resp.StatusCode, "connections:", srv.Connections())
	// Output:
	// retrying a 503 from the instance at 127.0.0.1
	// status: 200 connections: 2
}
