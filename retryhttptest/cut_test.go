package retryhttptest_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	stdhttptest "net/http/httptest"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp/retryhttptest"
)

// fileBody is the content the tests of body faults serve, large enough
// that net/http streams it in many writes.
var fileBody = func() []byte {
	b := make([]byte, 1<<20)
	for i := range b {
		b[i] = byte(i * 7 % 251)
	}
	return b
}()

// serveFile answers with fileBody through http.ServeContent, which sets
// the Content-Length and answers range requests.
var serveFile = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("ETag", `"v1"`)
	http.ServeContent(w, r, "file.bin", time.Unix(1700000000, 0), bytes.NewReader(fileBody))
})

// requirePrefix checks that got is the first n bytes of fileBody, or, when
// upTo is set, a prefix of them: a reset discards what the client's system
// had received but not yet read. It never prints the bytes.
func requirePrefix(t *testing.T, got []byte, n int, upTo bool) {
	t.Helper()
	if upTo {
		require.LessOrEqual(t, len(got), n, "bytes read")
	} else {
		require.Equal(t, n, len(got), "bytes read")
	}
	require.True(t, bytes.Equal(fileBody[:len(got)], got), "the bytes read are the body's first")
}

// readUntilError reads resp's body until an error, and returns what it
// read and the error (nil at the end of the body).
func readUntilError(resp *http.Response) ([]byte, error) {
	defer resp.Body.Close()
	return io.ReadAll(resp.Body)
}

func TestServerCutsTheBody(t *testing.T) {
	const n = 300_000
	tests := []struct {
		name  string
		start starter
		fault retryhttptest.Fault
		errIs error // nil: any error
	}{
		{"close HTTP/1.1", retryhttptest.NewServer, retryhttptest.CloseAfter(n), io.ErrUnexpectedEOF},
		{"reset HTTP/1.1", retryhttptest.NewServer, retryhttptest.ResetAfter(n), syscall.ECONNRESET},
		{"close HTTP/2", retryhttptest.NewHTTP2Server, retryhttptest.CloseAfter(n), nil}, // the stream is reset
		{"reset HTTP/2", retryhttptest.NewHTTP2Server, retryhttptest.ResetAfter(n), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := tt.start(serveFile, tt.fault)
			defer srv.Close()
			resp, err := srv.Client().Get(srv.URL + "/file")
			require.NoError(t, err)
			assert.Equal(t, int64(len(fileBody)), resp.ContentLength, "the headers promise the whole body")
			got, err := readUntilError(resp)
			require.Error(t, err)
			if tt.errIs != nil {
				assert.ErrorIs(t, err, tt.errIs)
			}
			requirePrefix(t, got, n, strings.HasPrefix(tt.name, "reset"))
			assert.Equal(t, 1, srv.Executions())
			assert.Equal(t, []string{strings.Fields(tt.name)[0] + " after 300000"}, srv.Request("GET /file").Outcomes)
		})
	}
}

// TestServerCutThenRange cuts the first attempt of a request and lets its
// range request through: the handler, not the fault, answers the range.
func TestServerCutThenRange(t *testing.T) {
	for _, start := range []starter{retryhttptest.NewServer, retryhttptest.NewHTTP2Server} {
		srv := start(serveFile, retryhttptest.Sequence(retryhttptest.ResetAfter(1000)))
		resp, err := srv.Client().Get(srv.URL + "/file")
		require.NoError(t, err)
		got, err := readUntilError(resp)
		require.Error(t, err)
		requirePrefix(t, got, 1000, true)

		req, err := http.NewRequest(http.MethodGet, srv.URL+"/file", nil)
		require.NoError(t, err)
		req.Header.Set("Range", "bytes="+strconv.Itoa(len(got))+"-")
		req.Header.Set("If-Range", `"v1"`)
		resp, err = srv.Client().Do(req)
		require.NoError(t, err)
		assert.Equal(t, http.StatusPartialContent, resp.StatusCode)
		rest, err := readUntilError(resp)
		require.NoError(t, err)
		requirePrefix(t, append(got, rest...), len(fileBody), false)
		assert.Equal(t, []string{"reset after 1000", "pass"}, srv.Request("GET /file").Outcomes)
		srv.Close()
	}
}

func TestServerBodyShorterThanTheCutPasses(t *testing.T) {
	srv := retryhttptest.NewServer(serveFile, retryhttptest.CloseAfter(int64(len(fileBody))))
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	require.NoError(t, err)
	got, err := readUntilError(resp)
	require.NoError(t, err)
	requirePrefix(t, got, len(fileBody), false)
}

func TestServerStallsTheBody(t *testing.T) {
	for _, start := range []starter{retryhttptest.NewServer, retryhttptest.NewHTTP2Server} {
		srv := start(serveFile, retryhttptest.StallAfter(5000))
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		require.NoError(t, err)
		resp, err := srv.Client().Do(req)
		require.NoError(t, err)
		got, err := readUntilError(resp)
		assert.ErrorIs(t, err, context.DeadlineExceeded, "the read waits until the client gives up")
		requirePrefix(t, got, 5000, false)
		cancel()
		srv.Close() // returns: the stalled handler has ended
	}
}

// TestServerCloseEndsStall checks that closing the server ends a stalled
// body, for the client too.
func TestServerCloseEndsStall(t *testing.T) {
	srv := retryhttptest.NewServer(serveFile, retryhttptest.StallAfter(5000))
	resp, err := srv.Client().Get(srv.URL)
	require.NoError(t, err)
	defer resp.Body.Close()
	_, err = io.ReadFull(resp.Body, make([]byte, 5000))
	require.NoError(t, err)
	srv.Close()
	_, err = io.ReadAll(resp.Body)
	assert.Error(t, err)
}

func TestProxyCutsTheUpstreamBody(t *testing.T) {
	up := stdhttptest.NewServer(serveFile)
	defer up.Close()
	p := retryhttptest.NewProxy(up.URL, retryhttptest.Sequence(retryhttptest.CloseAfter(70_000)))
	defer p.Close()

	resp, err := p.Client().Get(p.URL + "/file")
	require.NoError(t, err)
	got, err := readUntilError(resp)
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
	requirePrefix(t, got, 70_000, false)

	req, err := http.NewRequest(http.MethodGet, p.URL+"/file", nil)
	require.NoError(t, err)
	req.Header.Set("Range", "bytes=70000-")
	resp, err = p.Client().Do(req)
	require.NoError(t, err)
	assert.Equal(t, http.StatusPartialContent, resp.StatusCode, "the range reaches the upstream")
	rest, err := readUntilError(resp)
	require.NoError(t, err)
	requirePrefix(t, append(got, rest...), len(fileBody), false)
	assert.Equal(t, 2, p.Executions())
}

func TestProxyStallEndsWhenTheClientGivesUp(t *testing.T) {
	up := stdhttptest.NewServer(serveFile)
	defer up.Close()
	p := retryhttptest.NewProxy(up.URL, retryhttptest.StallAfter(10))
	defer p.Close()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL, nil)
	require.NoError(t, err)
	resp, err := p.Client().Do(req)
	require.NoError(t, err)
	// The body stalls for good after 10 bytes: the client gives up once it
	// has them, and the read that waits for more ends then.
	got := make([]byte, 10)
	_, err = io.ReadFull(resp.Body, got)
	require.NoError(t, err)
	cancel()
	rest, err := readUntilError(resp)
	assert.ErrorIs(t, err, context.Canceled)
	requirePrefix(t, append(got, rest...), 10, false)
}

func TestTransportCutsTheBody(t *testing.T) {
	tests := []struct {
		name  string
		fault retryhttptest.Fault
		errIs error
	}{
		{"close", retryhttptest.CloseAfter(1000), io.ErrUnexpectedEOF},
		{"reset", retryhttptest.ResetAfter(1000), syscall.ECONNRESET},
		{"stall", retryhttptest.StallAfter(1000), context.DeadlineExceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tr := retryhttptest.NewTransport(serveFile, tt.fault)
				req, _ := request(t, "GET", "http://svc.test/file", "", time.Minute)
				start := time.Now()
				resp, err := tr.RoundTrip(req)
				require.NoError(t, err)
				got, err := readUntilError(resp)
				assert.ErrorIs(t, err, tt.errIs)
				requirePrefix(t, got, 1000, false)
				if tt.name == "stall" {
					assert.Equal(t, time.Minute, time.Since(start), "the stall lasts until the client gives up")
				}
				assert.Equal(t, []string{tt.name + " after 1000"}, tr.Request("GET /file").Outcomes)
			})
		})
	}
}

// TestTransportCloseEndsStall checks that closing a stalled body ends the
// read blocked on it, as closing a net/http body does.
func TestTransportCloseEndsStall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := retryhttptest.NewTransport(serveFile, retryhttptest.StallAfter(10))
		req, _ := request(t, "GET", "http://svc.test/file", "", 0)
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		done := make(chan error, 1)
		go func() {
			_, err := io.ReadAll(resp.Body)
			done <- err
		}()
		synctest.Wait()
		require.Empty(t, done, "the read is blocked")
		resp.Body.Close()
		err = <-done
		require.Error(t, err)
		assert.False(t, errors.Is(err, context.Canceled))
		_, err = resp.Body.Read(make([]byte, 1))
		assert.Error(t, err, "a closed body fails reads")
	})
}

// TestTransportRangeAfterCut checks the in-memory kit with a handler that
// answers ranges: the retry of a cut body can fetch the rest.
func TestTransportRangeAfterCut(t *testing.T) {
	tr := retryhttptest.NewTransport(serveFile, retryhttptest.Sequence(retryhttptest.CloseAfter(4096)))
	req, _ := request(t, "GET", "http://svc.test/file", "", 0)
	resp, err := tr.RoundTrip(req)
	require.NoError(t, err)
	got, err := readUntilError(resp)
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)

	req, _ = request(t, "GET", "http://svc.test/file", "", 0)
	req.Header.Set("Range", "bytes=4096-")
	resp, err = tr.RoundTrip(req)
	require.NoError(t, err)
	assert.Equal(t, http.StatusPartialContent, resp.StatusCode)
	rest, err := readUntilError(resp)
	require.NoError(t, err)
	requirePrefix(t, append(got, rest...), len(fileBody), false)
}
