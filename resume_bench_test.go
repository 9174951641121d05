package retryhttp

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// resumableStub answers every request with a canned 200 whose body may be
// resumed: Accept-Ranges, a strong ETag, a length. It allocates nothing
// itself.
type resumableStub struct {
	resp http.Response
	body nopReader
}

type nopReader struct{}

func (nopReader) Read([]byte) (int, error) { return 0, io.EOF }
func (nopReader) Close() error             { return nil }

func (s *resumableStub) RoundTrip(*http.Request) (*http.Response, error) {
	// The Transport wraps the body it returns: start each round trip from
	// the canned one.
	s.resp.Body = s.body
	return &s.resp, nil
}

func newResumableStub() *resumableStub {
	h := http.Header{"Accept-Ranges": {"bytes"}, "Etag": {`"0123456789abcdef"`}, "Content-Length": {"1048576"}}
	return &resumableStub{resp: http.Response{StatusCode: 200, Header: h, ContentLength: 1 << 20}}
}

// BenchmarkResumableOverhead compares the success path of a GET whose
// response may be resumed, through the bare stub and through a default
// Transport over it: the Transport wraps the body, in one allocation. The
// GET whose response may not be resumed is BenchmarkOverhead's.
func BenchmarkResumableOverhead(b *testing.B) {
	for _, tr := range []struct {
		name string
		rt   http.RoundTripper
	}{
		{"bare", newResumableStub()},
		{"retryhttp", New(WithBase(newResumableStub()))},
		{"retryhttp-WithoutResume", New(WithBase(newResumableStub()), WithoutResume())},
	} {
		b.Run(tr.name, func(b *testing.B) {
			req, _ := http.NewRequest(http.MethodGet, "http://svc.test/file", nil)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := tr.rt.RoundTrip(req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestResumableGetAllocatesOnce pins the cost of a GET whose response may
// be resumed: the body's wrapper, one allocation, which after a first
// attempt sent as the caller made it holds no retry machine.
func TestResumableGetAllocatesOnce(t *testing.T) {
	req, _ := http.NewRequest(http.MethodGet, "http://svc.test/file", nil)
	assert.LessOrEqual(t, allocsPerRoundTrip(t, New(WithBase(newResumableStub())), req, func() {}), 1.0)
}

// pattern is a file of size bytes whose content repeats a block, read
// without holding it in memory, for http.ServeContent.
type pattern struct {
	size, off int64
}

var patternBlock = func() []byte {
	b := make([]byte, 64<<10)
	for i := range b {
		b[i] = byte(i*31 + i>>8)
	}
	return b
}()

func (p *pattern) Read(b []byte) (int, error) {
	if p.off >= p.size {
		return 0, io.EOF
	}
	b = b[:min(int64(len(b)), p.size-p.off)]
	n := 0
	for n < len(b) {
		n += copy(b[n:], patternBlock[(p.off+int64(n))%int64(len(patternBlock)):])
	}
	p.off += int64(n)
	return n, nil
}

func (p *pattern) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
		p.off = offset
	case io.SeekCurrent:
		p.off += offset
	case io.SeekEnd:
		p.off = p.size + offset
	}
	return p.off, nil
}

// readAll reads r to its end into buf, again and again, as a consumer that
// writes the body elsewhere does, and returns how many bytes it read. It
// calls Read itself: io.Copy would let a body with a WriteTo method (as
// net/http's have) read with buffers of its own, which the two transports
// compared would not share.
func readAll(r io.Reader, buf []byte) (int64, error) {
	var n int64
	for {
		m, err := r.Read(buf)
		n += int64(m)
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// BenchmarkReadLoopback reads a body of 256 MiB, which may be resumed,
// from a loopback server (http.ServeContent) through a plain pooled
// transport and through a default Transport over the same kind of
// transport, in 32 KiB reads: the difference is what watching and
// counting the body's bytes costs. MB/s is the throughput.
func BenchmarkReadLoopback(b *testing.B) {
	const size = 256 << 20
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", `"pattern-`+strconv.Itoa(size)+`"`)
		http.ServeContent(w, r, "", time.Unix(1_700_000_000, 0), &pattern{size: size})
	}))
	defer srv.Close()
	// One request first, so that what the server sets up once (mime's
	// tables) is not counted against the first transport measured.
	if resp, err := http.Get(srv.URL); err == nil {
		resp.Body.Close()
	}
	plainAndRetryhttp(b, func(b *testing.B, rt http.RoundTripper) {
		benchRead(b, rt, srv.URL, size)
	})
	// Paired: each iteration reads the body through both, one after the
	// other, each first in turn, so that whatever else loads the machine
	// weighs on both alike; the ratio is retryhttp's throughput over
	// plain's, the median of the iterations'.
	b.Run("paired", func(b *testing.B) {
		plain, rt := defaultBase(), New()
		defer plain.CloseIdleConnections()
		defer rt.CloseIdleConnections()
		buf := make([]byte, 32<<10)
		var ratios []float64
		for i := 0; b.Loop(); i++ {
			var tPlain, tRetry time.Duration
			if i%2 == 0 {
				tPlain = timeRead(b, plain, srv.URL, size, buf)
				tRetry = timeRead(b, rt, srv.URL, size, buf)
			} else {
				tRetry = timeRead(b, rt, srv.URL, size, buf)
				tPlain = timeRead(b, plain, srv.URL, size, buf)
			}
			ratios = append(ratios, tPlain.Seconds()/tRetry.Seconds())
		}
		slices.Sort(ratios)
		b.ReportMetric(ratios[len(ratios)/2], "retryhttp/plain")
	})
}

// timeRead gets url through rt, reads its body of size bytes into buf,
// and returns how long that took.
func timeRead(b *testing.B, rt http.RoundTripper, url string, size int64, buf []byte) time.Duration {
	start := time.Now()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	resp, err := rt.RoundTrip(req)
	if err != nil {
		b.Fatal(err)
	}
	n, err := readAll(resp.Body, buf)
	resp.Body.Close()
	if err != nil || n != size {
		b.Fatalf("read %d bytes: %v", n, err)
	}
	return time.Since(start)
}

// patternBase answers every request with a resumable 200 whose body is a
// pattern of size bytes, read from memory.
type patternBase struct{ size int64 }

func (p patternBase) RoundTrip(r *http.Request) (*http.Response, error) {
	h := http.Header{"Accept-Ranges": {"bytes"}, "Etag": {`"pattern"`}}
	return &http.Response{StatusCode: 200, Header: h, ContentLength: p.size, Request: r,
		Body: io.NopCloser(&pattern{size: p.size})}, nil
}

// BenchmarkReadInMemory reads a resumable body of 256 MiB from memory, in
// 32 KiB reads, bare and through a default Transport: with no network to
// hide it, the difference is all that watching and counting the bytes of
// a body costs its reads.
func BenchmarkReadInMemory(b *testing.B) {
	const size = 256 << 20
	for _, tr := range []struct {
		name string
		rt   http.RoundTripper
	}{
		{"bare", patternBase{size}},
		{"retryhttp", New(WithBase(patternBase{size}))},
	} {
		b.Run(tr.name, func(b *testing.B) { benchRead(b, tr.rt, "http://svc.test/file", size) })
	}
}

// benchRead gets url through rt and reads its body of size bytes, in 32 KiB
// reads, b.N times.
func benchRead(b *testing.B, rt http.RoundTripper, url string, size int64) {
	buf := make([]byte, 32<<10)
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		timeRead(b, rt, url, size, buf)
	}
}
