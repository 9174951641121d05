package interop

import (
	"cmp"
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	nethttptest "net/http/httptest"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/interop/internal/nginx"
	"github.com/retryhttp/retryhttp/resume"
	"github.com/retryhttp/retryhttp/retryhttptest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// newTransport returns a retryhttp Transport with its defaults, closed
// with the test.
func newTransport(t *testing.T, opts ...retryhttp.Option) *retryhttp.Transport {
	tr := retryhttp.New(opts...)
	t.Cleanup(tr.CloseIdleConnections)
	return tr
}

// fileBehindProxy starts nginx serving a file of fileSize bytes drawn from
// seed, called name, and the kit's proxy in front of it, whose attempts get
// fault; both stop with the test.
func fileBehindProxy(t *testing.T, name string, seed uint64, fault retryhttptest.Fault) (*nginx.Server, []byte, *retryhttptest.Proxy) {
	s := startNginx(t)
	data := staticFile(t, s, name, fileSize, seed)
	proxy := retryhttptest.NewProxy(s.URL, fault)
	t.Cleanup(proxy.Close)
	return s, data, proxy
}

// requestsFor waits until nginx has logged n requests for uri, and returns
// them: the first request (no Range) first, then the requests for the rest
// in order of the offset they asked for. nginx logs a request once it has
// finished with it, and may finish a cut one after the request that
// resumed it.
func requestsFor(t *testing.T, s *nginx.Server, uri string, n int) []nginx.Request {
	t.Helper()
	var mine []nginx.Request
	deadline := time.Now().Add(logWait)
	for logged := n; len(mine) < n; {
		reqs, err := s.Requests(logged, time.Until(deadline))
		require.NoError(t, err, "nginx logged %d requests for %s, want %d", len(mine), uri, n)
		mine = slices.DeleteFunc(reqs, func(r nginx.Request) bool { return r.URI != uri })
		logged = len(reqs) + 1 // the others were for other files: wait for one more
	}
	slices.SortStableFunc(mine, func(a, b nginx.Request) int {
		return cmp.Compare(rangeStart(t, a.Range), rangeStart(t, b.Range))
	})
	return mine
}

// rangeStart returns N of "bytes=N-", and -1 for no Range.
func rangeStart(t *testing.T, rng string) int64 {
	if rng == "" {
		return -1
	}
	v, ok := strings.CutPrefix(rng, "bytes=")
	require.True(t, ok, rng)
	v, ok = strings.CutSuffix(v, "-")
	require.True(t, ok, "an open range for the rest: %s", rng)
	n, err := strconv.ParseInt(v, 10, 64)
	require.NoError(t, err, rng)
	return n
}

// TestNginxResumesCutBodies downloads nginx's 16 MiB file through the
// kit's proxy, which closes or resets the connection partway, once or
// twice, and checks that retryhttp, at its defaults, gives the caller every
// byte, in order, and that nginx saw one more request per cut, each for the
// rest from the byte the caller had reached, with If-Range on the file's
// ETag, answered 206.
func TestNginxResumesCutBodies(t *testing.T) {
	t.Parallel()
	s := startNginx(t)
	tests := []struct {
		name  string
		fault retryhttptest.Fault
		cuts  []int64 // where each attempt's body is cut, counted in that attempt's body
		exact bool    // the client receives exactly the bytes sent before a cut (not so after a reset)
	}{
		{"closed once", retryhttptest.First(1, retryhttptest.CloseAfter(5<<20)), []int64{5 << 20}, true},
		{"reset once", retryhttptest.First(1, retryhttptest.ResetAfter(5<<20)), []int64{5 << 20}, false},
		{"closed twice", retryhttptest.Sequence(retryhttptest.CloseAfter(3<<20), retryhttptest.CloseAfter(4<<20)), []int64{3 << 20, 4 << 20}, true},
		{"reset twice", retryhttptest.Sequence(retryhttptest.ResetAfter(3<<20), retryhttptest.ResetAfter(4<<20)), []int64{3 << 20, 4 << 20}, false},
		{"closed, then reset", retryhttptest.Sequence(retryhttptest.CloseAfter(6<<20), retryhttptest.ResetAfter(1<<20)), []int64{6 << 20, 1 << 20}, false},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := "file" + strconv.Itoa(i) + ".bin"
			data := staticFile(t, s, name, fileSize, uint64(i)+10)
			proxy := retryhttptest.NewProxy(s.URL, tt.fault)
			defer proxy.Close()

			resp, got, err := download(t.Context(), t, newTransport(t), proxy.URL+"/"+name)
			require.NoError(t, err)
			require.Equal(t, len(data), len(got), "bytes read")
			require.True(t, slices.Equal(data, got), "the caller read the file, byte for byte")

			etag := resp.Header.Get("ETag")
			require.Regexp(t, etagPattern, etag)
			assert.Equal(t, len(tt.cuts)+1, proxy.Attempts(), "one request per cut, and one more")
			reqs := requestsFor(t, s, "/"+name, len(tt.cuts)+1)
			require.Len(t, reqs, len(tt.cuts)+1, "nginx's requests: %+v", reqs)
			assert.Equal(t, 200, reqs[0].Status)
			assert.Empty(t, reqs[0].Range+reqs[0].IfRange)
			var reached int64 // where a request for the rest could start, at most
			for j, r := range reqs[1:] {
				reached += tt.cuts[j]
				from := rangeStart(t, r.Range)
				assert.Equal(t, 206, r.Status, "request %d: %+v", j+1, r)
				assert.Equal(t, etag, r.IfRange, "request %d pins the first response's ETag", j+1)
				assert.LessOrEqual(t, from, reached, "request %d", j+1)
				if tt.exact {
					assert.Equal(t, reached, from, "request %d asks from the byte the caller reached", j+1)
				}
				reached = from
			}
		})
	}
}

// TestNginxChangedFileIsNeverSpliced replaces the file while its download
// is under way (renamed over it, as a deploy does, so that nginx finishes
// the first response from the old one), then the proxy cuts the body. The
// request for the rest carries the old ETag in If-Range; nginx answers
// with the new file whole (200), and retryhttp ends the read with a
// *resume.Error (resume.Changed) after the old file's bytes: never a byte of
// the new file spliced onto the old.
func TestNginxChangedFileIsNeverSpliced(t *testing.T) {
	t.Parallel()
	s, old, proxy := fileBehindProxy(t, "changing.bin", 2, retryhttptest.First(1, retryhttptest.CloseAfter(5<<20)))
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, proxy.URL+"/changing.bin", nil)
	require.NoError(t, err)
	resp, err := newTransport(t).RoundTrip(req)
	require.NoError(t, err)
	defer resp.Body.Close()

	head := make([]byte, 1<<20)
	_, err = io.ReadFull(resp.Body, head)
	require.NoError(t, err)
	require.Equal(t, old[:1<<20], head)
	// The new version: other bytes, another size, a later time.
	tmp := filepath.Join(s.Root, ".changing.bin.new")
	require.NoError(t, os.WriteFile(tmp, fileData(fileSize+4096, 99), 0o644))
	require.NoError(t, os.Rename(tmp, filepath.Join(s.Root, "changing.bin")))

	rest, err := io.ReadAll(resp.Body)
	var re *resume.Error
	require.ErrorAs(t, err, &re)
	assert.Equal(t, resume.Changed, re.Reason, "%v", err)
	assert.Equal(t, int64(5<<20), re.Offset)
	assert.Equal(t, 1, re.Resumes)
	assert.Equal(t, http.StatusOK, re.StatusCode)
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF, "the cut, unwrapped")
	got := append(head, rest...)
	require.Len(t, got, 5<<20, "the old file's bytes up to the cut, and no more")
	assert.True(t, slices.Equal(old[:5<<20], got), "every byte read is the old file's")
	_, err = resp.Body.Read(make([]byte, 1))
	assert.ErrorAs(t, err, &re, "the read stays failed")

	reqs := requestsFor(t, s, "/changing.bin", 2)
	assert.Equal(t, resp.Header.Get("ETag"), reqs[1].IfRange)
	assert.Equal(t, "bytes=5242880-", reqs[1].Range)
	assert.Equal(t, 200, reqs[1].Status, "If-Range did not match: nginx sent the new file whole")
}

// TestNginxResumesStalledBody stops the body 1 MiB in and leaves the
// connection open, as a hung path does. Under a 30 s deadline, retryhttp's
// default stall timeout (10 s) notices, and the rest is fetched: the read
// ends whole, long before the deadline.
func TestNginxResumesStalledBody(t *testing.T) {
	t.Parallel()
	s, data, proxy := fileBehindProxy(t, "stalls.bin", 3, retryhttptest.First(1, retryhttptest.StallAfter(1<<20)))
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	start := time.Now()
	_, got, err := download(ctx, t, newTransport(t), proxy.URL+"/stalls.bin")
	elapsed := time.Since(start)
	require.NoError(t, err, "read whole within the deadline")
	require.True(t, slices.Equal(data, got), "the caller read the file, byte for byte")
	const stallTimeout = 10 * time.Second // the default, as resume.StallTimeout says
	assert.GreaterOrEqual(t, elapsed, stallTimeout, "a stall is a stall timeout's silence")
	t.Logf("read whole in %v", elapsed.Round(time.Millisecond))
	reqs := requestsFor(t, s, "/stalls.bin", 2)
	assert.Equal(t, "bytes=1048576-", reqs[1].Range)
	assert.Equal(t, 206, reqs[1].Status)
}

// TestNginxResumesResetHTTP2Stream puts an HTTP/2 front (a reverse proxy
// over TLS, as a CDN or a load balancer is) before the kit's proxy and
// nginx: the kit's cut of the HTTP/1.1 leg becomes a reset of the client's
// HTTP/2 stream (INTERNAL_ERROR), on a connection that carries on.
// retryhttp fetches the rest, over HTTP/2, and the caller reads the file
// whole.
func TestNginxResumesResetHTTP2Stream(t *testing.T) {
	t.Parallel()
	s, data, proxy := fileBehindProxy(t, "h2.bin", 4, retryhttptest.First(1, retryhttptest.CloseAfter(5<<20)))
	front := newHTTP2Front(t, proxy.URL)

	base := front.Client().Transport.(*http.Transport).Clone()
	t.Cleanup(base.CloseIdleConnections)
	var events []retryhttp.RetryEvent
	tr := newTransport(t, retryhttp.WithBase(base), retryhttp.WithOnRetry(func(e retryhttp.RetryEvent) { events = append(events, e) }))
	resp, got, err := download(t.Context(), t, tr, front.URL+"/h2.bin")
	require.NoError(t, err)
	assert.Equal(t, 2, resp.ProtoMajor)
	require.True(t, slices.Equal(data, got), "the caller read the file, byte for byte")
	require.Len(t, events, 1)
	assert.True(t, events[0].Resume)
	assert.Contains(t, events[0].Err.Error(), "INTERNAL_ERROR", "the stream was reset")
	reqs := requestsFor(t, s, "/h2.bin", 2)
	assert.Equal(t, "bytes=5242880-", reqs[1].Range)
	assert.Equal(t, 206, reqs[1].Status)
}

// newHTTP2Front starts a reverse proxy to upstream that speaks HTTP/2 over
// TLS to its clients, closed with the test. A body that fails on its way
// from upstream resets the client's stream: net/http's ReverseProxy aborts
// the handler (http.ErrAbortHandler), as it does in production.
func newHTTP2Front(t *testing.T, upstream string) *nethttptest.Server {
	u, err := url.Parse(upstream)
	require.NoError(t, err)
	rp := &httputil.ReverseProxy{
		Rewrite:       func(pr *httputil.ProxyRequest) { pr.SetURL(u) },
		FlushInterval: -1,
		ErrorLog:      discardLog,
	}
	front := nethttptest.NewUnstartedServer(rp)
	front.EnableHTTP2 = true
	front.Config.ErrorLog = discardLog
	front.StartTLS()
	t.Cleanup(front.Close)
	return front
}

// discardLog is the error log of servers whose clients fail on purpose.
var discardLog = log.New(io.Discard, "", 0)
