package resume_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"time"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/backoff"
	"github.com/retryhttp/retryhttp/resume"
	"github.com/retryhttp/retryhttp/retryhttptest"
)

// serveFile serves 64 KiB through http.ServeContent, which answers range
// requests, with the entity tag etag.
func serveFile(etag string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", etag)
		http.ServeContent(w, r, "", time.Unix(1_700_000_000, 0), bytes.NewReader(make([]byte, 64<<10)))
	})
}

// download reads the file at url whole through client, and prints how
// many bytes it got and how it ended.
func download(client *http.Client, url string) {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
	if err != nil {
		log.Fatal(err)
	}
	resp, err := client.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	fmt.Println("read", n, "bytes, error:", err)
}

func ExampleLimit() {
	// The server closes the connection after 10,000 bytes of every answer:
	// the first response's, and the resume's.
	srv := retryhttptest.NewServer(serveFile(`"v1"`), retryhttptest.CloseAfter(10_000))
	defer srv.Close()

	client := &http.Client{Transport: retryhttp.New(
		retryhttp.WithResume(resume.Limit(1)), // one request for the rest of a body
		retryhttp.WithBackoff(backoff.Constant(0)),
	)}
	download(client, srv.URL)
	// Output:
	// read 20000 bytes, error: retryhttp: response body not resumed at byte 20000: resumes given up (resume limit reached) after 1 resumes: unexpected EOF
}

func ExampleStallTimeout() {
	// The server stops sending after 10,000 bytes of the body, the first
	// time, and keeps the connection open.
	srv := retryhttptest.NewServer(serveFile(`"v1"`), retryhttptest.Sequence(retryhttptest.StallAfter(10_000)))
	defer srv.Close()

	client := &http.Client{Transport: retryhttp.New(
		retryhttp.WithResume(resume.StallTimeout(500*time.Millisecond)),
		retryhttp.WithOnRetry(func(e retryhttp.RetryEvent) {
			fmt.Println("stalled:", errors.Is(e.Err, resume.ErrStalled), "at byte", e.Offset)
		}),
	)}
	download(client, srv.URL)
	// Output:
	// stalled: true at byte 10000
	// read 65536 bytes, error: <nil>
}

func ExampleError() {
	// A weak entity tag may name other bytes: the body is not resumed.
	srv := retryhttptest.NewServer(serveFile(`W/"v1"`), retryhttptest.CloseAfter(10_000))
	defer srv.Close()

	client := &http.Client{Transport: retryhttp.New()}
	resp, err := client.Get(srv.URL)
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	var rerr *resume.Error
	if errors.As(err, &rerr) {
		fmt.Printf("not resumed at byte %d: %s\n", rerr.Offset, rerr.Reason)
		fmt.Println("cut:", errors.Is(err, io.ErrUnexpectedEOF))
	}
	// Output:
	// not resumed at byte 10000: entity tag is weak
	// cut: true
}
