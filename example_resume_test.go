package retryhttp_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"time"

	"github.com/retryhttp/retryhttp"
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
func download(client *http.Client, ctx context.Context, url string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
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

func ExampleWithResume() {
	// The server closes the connection after 10,000 bytes of the body, the
	// first time.
	srv := retryhttptest.NewServer(serveFile(`"v1"`), retryhttptest.Sequence(retryhttptest.CloseAfter(10_000)))
	defer srv.Close()

	client := &http.Client{Transport: retryhttp.New(
		retryhttp.WithResume(resume.Limit(3)), // at most 3 requests for the rest of one body
		retryhttp.WithOnRetry(func(e retryhttp.RetryEvent) {
			fmt.Println("resuming:", e.Resume, "at byte", e.Offset, "after", e.Err)
		}),
	)}
	download(client, context.Background(), srv.URL)
	fmt.Println("requests:", srv.Attempts())
	// Output:
	// resuming: true at byte 10000 after unexpected EOF
	// read 65536 bytes, error: <nil>
	// requests: 2
}

func ExampleWithoutResume() {
	srv := retryhttptest.NewServer(serveFile(`"v1"`), retryhttptest.Sequence(retryhttptest.CloseAfter(10_000)))
	defer srv.Close()

	// The cut reaches the caller, as through a plain transport.
	client := &http.Client{Transport: retryhttp.New(retryhttp.WithoutResume())}
	download(client, context.Background(), srv.URL)
	// Output:
	// read 10000 bytes, error: unexpected EOF
}

func ExampleNoResume() {
	srv := retryhttptest.NewServer(serveFile(`"v1"`), retryhttptest.Sequence(retryhttptest.CloseAfter(10_000)))
	defer srv.Close()

	// This caller resumes by itself: the Transport leaves this call's body
	// alone.
	client := &http.Client{Transport: retryhttp.New()}
	download(client, retryhttp.NoResume(context.Background()), srv.URL)
	// Output:
	// read 10000 bytes, error: unexpected EOF
}
