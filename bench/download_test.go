package bench

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp/bench/peers"
)

// benchDownloadSize is the body BenchmarkDownload reads per operation: 16
// MiB, so that a brief run stays brief. The throughput scenario reads
// 256 MiB.
const benchDownloadSize = 16 << 20

// BenchmarkDownload reads a 16 MiB body from a loopback server, and from
// memory, through a plain transport and through retryhttp: the cost of the
// body retryhttp returns for a response it could resume.
func BenchmarkDownload(b *testing.B) {
	for _, where := range []string{"loopback", "memory"} {
		for _, name := range []string{peers.Plain, peers.RetryHTTP} {
			lib, _ := peers.ByName(name)
			b.Run(where+"/"+name, func(b *testing.B) { BenchDownload(b, lib, benchDownloadSize, where == "memory") })
		}
	}
}

// TestBlobServer checks the download the benchmark and the throughput
// scenario read: its length, its validators, and that a range of it is
// those bytes of the whole.
func TestBlobServer(t *testing.T) {
	const size = 1<<20 + 123
	srv := NewBlobServer(size)
	defer srv.Close()
	n, err := Download(http.DefaultTransport, srv.URL, make([]byte, 32<<10))
	require.NoError(t, err)
	assert.Equal(t, int64(size), n)

	get := func(rng string) (*http.Response, []byte) {
		req, err := http.NewRequest(http.MethodGet, srv.URL, nil)
		require.NoError(t, err)
		if rng != "" {
			req.Header.Set("Range", rng)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp, b
	}
	resp, whole := get("")
	require.Len(t, whole, size)
	assert.Equal(t, `"blob-10007b"`, resp.Header.Get("ETag"))
	assert.Equal(t, "bytes", resp.Header.Get("Accept-Ranges"))
	assert.NotEqual(t, whole[:64<<10], whole[1:64<<10+1], "no short period")
	resp, part := get("bytes=70000-")
	assert.Equal(t, http.StatusPartialContent, resp.StatusCode)
	assert.Equal(t, whole[70000:], part)

	// The stub answers as the server does, through retryhttp too.
	lib, _ := peers.ByName(peers.RetryHTTP)
	n, err = Download(lib.New(BlobStub{Size: size}, OverheadConfig), "http://blob.test/", make([]byte, 32<<10))
	require.NoError(t, err)
	assert.Equal(t, int64(size), n)
	stub, err := BlobStub{Size: size}.RoundTrip(httptest.NewRequest(http.MethodGet, "http://blob.test/", nil))
	require.NoError(t, err)
	fromStub, err := io.ReadAll(stub.Body)
	require.NoError(t, err)
	assert.Equal(t, whole, fromStub)
	assert.Equal(t, resp.Header.Get("ETag"), stub.Header.Get("ETag"))
}
