package bench

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/retryhttp/retryhttp/bench/peers"
)

// A blob is a large representation without the memory: size bytes that
// repeat a block, read and seeked as a file is.
type blob struct {
	size, off int64
}

// blobBlock is the block a blob repeats: 64 KiB, long enough that a body
// shifted or spliced at the wrong offset does not match.
var blobBlock = func() []byte {
	b := make([]byte, 64<<10)
	for i := range b {
		b[i] = byte(i*7 + i>>8 + i>>16)
	}
	return b
}()

func (b *blob) Read(p []byte) (int, error) {
	if b.off >= b.size {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), b.size-b.off)]
	n := 0
	for n < len(p) {
		n += copy(p[n:], blobBlock[(b.off+int64(n))%int64(len(blobBlock)):])
	}
	b.off += int64(n)
	return n, nil
}

func (b *blob) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += b.off
	case io.SeekEnd:
		offset += b.size
	}
	if offset < 0 {
		return 0, errors.New("blob: negative offset")
	}
	b.off = offset
	return offset, nil
}

// blobModified is the Last-Modified of the blob server's responses.
var blobModified = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// NewBlobServer starts a loopback server that answers every request with a
// representation of size bytes, generated as it is sent, through net/http's
// ServeContent: with Content-Length, Accept-Ranges, a strong ETag and
// Last-Modified, Range and If-Range honoured. It is the download a client
// that resumes bodies can resume, so the body it returns is the one it
// would resume.
func NewBlobServer(size int64) *httptest.Server {
	etag := fmt.Sprintf(`"blob-%x"`, size)
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", etag)
		w.Header().Set("Content-Type", "application/octet-stream")
		http.ServeContent(w, r, "", blobModified, &blob{size: size})
	}))
}

// Download GETs url through rt and reads its body to the end through buf,
// as io.Copy to a file does, returning how many bytes it read.
func Download(rt http.RoundTripper, url string, buf []byte) (int64, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("status %d", resp.StatusCode)
	}
	// Only a Writer, so that io.CopyBuffer reads through buf.
	return io.CopyBuffer(struct{ io.Writer }{io.Discard}, resp.Body, buf)
}

// BenchDownload downloads a body of size bytes from a blob server on
// loopback b.N times through lib over a fresh peers.NewBase transport.
func BenchDownload(b *testing.B, lib peers.Library, size int64) {
	srv := NewBlobServer(size)
	defer srv.Close()
	base := peers.NewBase()
	defer base.CloseIdleConnections()
	rt := lib.New(base, OverheadConfig)
	buf := make([]byte, 32<<10)
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		n, err := Download(rt, srv.URL+"/blob.bin", buf)
		if err != nil {
			b.Fatal(err)
		}
		if n != size {
			b.Fatalf("read %d bytes of %d", n, size)
		}
	}
}
