package interop

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/retryhttp/retryhttp/interop/internal/nginx"
	"github.com/retryhttp/retryhttp/retryhttptest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fileSize is the size of the static file the tests download: large enough
// that a body is cut several MiB in, as large downloads are.
const fileSize = 16 << 20

// logWait bounds the wait for nginx to log a request it has finished.
const logWait = 10 * time.Second

// startNginx starts nginx for the test, stopped when it ends. It fails the
// test, saying how to install nginx, when nginx is not installed: these
// tests never skip.
func startNginx(t *testing.T) *nginx.Server {
	t.Helper()
	s, err := nginx.Start(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(s.Close)
	return s
}

// staticFile writes name, size bytes drawn from seed, into the folder s
// serves, last modified an hour ago as a file published earlier is (so
// that its Last-Modified is a strong validator too), and returns its bytes.
func staticFile(t *testing.T, s *nginx.Server, name string, size int, seed uint64) []byte {
	t.Helper()
	data := fileData(size, seed)
	path := filepath.Join(s.Root, name)
	require.NoError(t, os.WriteFile(path, data, 0o644))
	old := time.Now().Add(-time.Hour - time.Duration(seed)*time.Minute)
	require.NoError(t, os.Chtimes(path, old, old))
	return data
}

// fileData returns size bytes drawn from seed.
func fileData(size int, seed uint64) []byte {
	data := make([]byte, size)
	rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8)}).Read(data)
	return data
}

// download GETs url through rt under ctx and reads the body to its end,
// returning the response, the bytes read and the error that ended the read
// (nil at io.EOF).
func download(ctx context.Context, t *testing.T, rt http.RoundTripper, url string) (*http.Response, []byte, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	require.NoError(t, err)
	resp, err := rt.RoundTrip(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var buf bytes.Buffer
	_, err = io.Copy(&buf, resp.Body)
	return resp, buf.Bytes(), err
}

// plainTransport is a transport like http.DefaultTransport, closed with
// the test.
func plainTransport(t *testing.T) *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	return tr
}

// etagPattern is the shape of nginx's ETag for a static file: strong, its
// modification time and size in hexadecimal.
const etagPattern = `^"[0-9a-f]+-[0-9a-f]+"$`

// TestNginxCutFailsWithoutRetryhttp shows the failure the other tests
// rescue: nginx's body, closed or reset by the proxy 5 MiB in, ends a plain
// client's read in an error, the rest never asked for.
func TestNginxCutFailsWithoutRetryhttp(t *testing.T) {
	t.Parallel()
	s := startNginx(t)
	data := staticFile(t, s, "big.bin", fileSize, 1)
	for _, tt := range []struct {
		name  string
		fault retryhttptest.Fault
		err   error
	}{
		{"closed", retryhttptest.CloseAfter(5 << 20), io.ErrUnexpectedEOF},
		{"reset", retryhttptest.ResetAfter(5 << 20), syscall.ECONNRESET},
	} {
		t.Run(tt.name, func(t *testing.T) {
			proxy := retryhttptest.NewProxy(s.URL, tt.fault)
			defer proxy.Close()
			resp, got, err := download(t.Context(), t, plainTransport(t), proxy.URL+"/big.bin")
			require.ErrorIs(t, err, tt.err)
			assert.LessOrEqual(t, len(got), 5<<20)
			assert.Equal(t, data[:len(got)], got)
			assert.Equal(t, int64(fileSize), resp.ContentLength)
			assert.Regexp(t, etagPattern, resp.Header.Get("ETag"), "nginx's strong ETag")
			assert.Equal(t, "bytes", resp.Header.Get("Accept-Ranges"))
			assert.Equal(t, 1, proxy.Attempts())
		})
	}
	reqs, err := s.Requests(2, logWait)
	require.NoError(t, err)
	for _, r := range reqs {
		assert.Equal(t, 200, r.Status)
		assert.Empty(t, r.Range, "nothing asked for the rest")
	}
}
