package nginx

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestServesRangesAndLogs checks what the interop tests rely on: a static
// file served with a strong ETag and Accept-Ranges, If-Range honoured, and
// every request in the access log with its Range and If-Range.
func TestServesRangesAndLogs(t *testing.T) {
	s, err := Start(t.TempDir())
	require.NoError(t, err)
	defer s.Close()
	data := []byte("0123456789abcdefghij")
	require.NoError(t, os.WriteFile(filepath.Join(s.Root, "f.txt"), data, 0o644))

	get := func(header ...string) (*http.Response, []byte) {
		req, err := http.NewRequest(http.MethodGet, s.URL+"/f.txt", nil)
		require.NoError(t, err)
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp, b
	}
	resp, b := get()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, data, b)
	etag := resp.Header.Get("ETag")
	assert.Regexp(t, `^"[0-9a-f]+-14"$`, etag, "a strong ETag of mtime and size")
	assert.Equal(t, "bytes", resp.Header.Get("Accept-Ranges"))

	resp, b = get("Range", "bytes=5-", "If-Range", etag)
	assert.Equal(t, http.StatusPartialContent, resp.StatusCode)
	assert.Equal(t, "bytes 5-19/20", resp.Header.Get("Content-Range"))
	assert.Equal(t, data[5:], b)

	resp, b = get("Range", "bytes=5-", "If-Range", `"other"`)
	assert.Equal(t, http.StatusOK, resp.StatusCode, "another validator: the whole file")
	assert.Equal(t, data, b)

	reqs, err := s.Requests(3, 10*time.Second)
	require.NoError(t, err)
	require.Len(t, reqs, 3)
	assert.Equal(t, Request{Method: "GET", URI: "/f.txt", Status: 200, Bytes: 20, Connection: reqs[0].Connection}, reqs[0])
	assert.Equal(t, Request{Method: "GET", URI: "/f.txt", Status: 206, Bytes: 15, Range: "bytes=5-", IfRange: etag,
		Connection: reqs[1].Connection}, reqs[1])
	assert.Equal(t, 200, reqs[2].Status)
	assert.Equal(t, `"other"`, reqs[2].IfRange)
}

// TestRequestsTimesOut checks that waiting for more requests than arrive
// ends, with an error.
func TestRequestsTimesOut(t *testing.T) {
	s, err := Start(t.TempDir())
	require.NoError(t, err)
	defer s.Close()
	reqs, err := s.Requests(1, 10*time.Millisecond)
	assert.Error(t, err)
	assert.Empty(t, reqs)
}
