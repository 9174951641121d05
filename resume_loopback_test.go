package retryhttp_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/backoff"
	"github.com/retryhttp/retryhttp/base"
	"github.com/retryhttp/retryhttp/resume"
	"github.com/retryhttp/retryhttp/retryhttptest"
)

// content returns n bytes that do not compress, the same for the same
// seed.
func content(n int, seed uint64) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(seed, seed))
	for i := 0; i+8 <= n; i += 8 {
		v := r.Uint64()
		for j := range 8 {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	return b
}

// eightMiB is the body the loopback tests of resumption serve.
var eightMiB = content(8<<20, 1)

// A file is a handler that serves versions of a file through
// http.ServeContent (so that net/http, not this project, answers Range and
// If-Range) and records the range headers of each request it gets.
type file struct {
	mu       sync.Mutex
	versions []version // the i-th request gets versions[min(i, len-1)]
	ranges   []string  // Range of each request, "" when none
	ifRanges []string  // If-Range of each request
}

type version struct {
	body []byte
	etag string // the ETag header, none when ""
	gzip bool   // served with Content-Encoding: gzip
}

func newFile(versions ...version) *file { return &file{versions: versions} }

func (f *file) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	v := f.versions[min(len(f.ranges), len(f.versions)-1)]
	f.ranges = append(f.ranges, r.Header.Get("Range"))
	f.ifRanges = append(f.ifRanges, r.Header.Get("If-Range"))
	f.mu.Unlock()
	if v.etag != "" {
		w.Header().Set("ETag", v.etag)
	}
	body := v.body
	if v.gzip {
		body = gzipped(body)
		w.Header().Set("Content-Encoding", "gzip")
	}
	// A modification time, and ServeContent's Date of now, make
	// Last-Modified a strong validator too.
	http.ServeContent(w, r, "", time.Unix(1_700_000_000, 0), bytes.NewReader(body))
}

// gzipped returns body compressed with gzip, at the fastest level: the
// tests need its framing, not its ratio.
func gzipped(body []byte) []byte {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	zw.Write(body)
	zw.Close()
	return buf.Bytes()
}

// requests returns the Range and If-Range of each request so far.
func (f *file) requests() (ranges, ifRanges []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.ranges...), append([]string(nil), f.ifRanges...)
}

// readAll reads a GET of url through rt whole, and returns the body and the
// error that ended it.
func readAll(t *testing.T, ctx context.Context, rt http.RoundTripper, method, url string) ([]byte, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, url, nil)
	require.NoError(t, err)
	resp, err := rt.RoundTrip(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	return io.ReadAll(resp.Body)
}

// requireSame checks that got is want, without printing megabytes.
func requireSame(t *testing.T, want, got []byte) {
	t.Helper()
	require.Equal(t, len(want), len(got), "bytes read")
	require.True(t, bytes.Equal(want, got), "the bytes read differ from the body")
}

// requirePrefixOf checks that got is a prefix of want: no byte is wrong.
func requirePrefixOf(t *testing.T, want, got []byte) {
	t.Helper()
	require.LessOrEqual(t, len(got), len(want), "bytes read")
	require.True(t, bytes.Equal(want[:len(got)], got), "a byte read is not the body's")
}

// newResumingTransport returns a Transport over base, as a user makes one,
// retries paced by a millisecond so that the tests run fast.
func newResumingTransport(base http.RoundTripper, opts ...retryhttp.Option) *retryhttp.Transport {
	opts = append([]retryhttp.Option{retryhttp.WithBase(base), retryhttp.WithBackoff(backoff.Constant(time.Millisecond))}, opts...)
	return retryhttp.New(opts...)
}

// TestResumeOverLoopback cuts an 8 MiB body served by http.ServeContent
// over real connections, and checks that the caller reads it whole and
// byte-identical, with one range request per cut, each starting where the
// caller was and pinned by If-Range to the first response's ETag.
func TestResumeOverLoopback(t *testing.T) {
	tests := []struct {
		name  string
		start func(http.Handler, retryhttptest.Fault, ...retryhttptest.Option) *retryhttptest.Server
		fault retryhttptest.Fault
		cuts  int
	}{
		{"closed", retryhttptest.NewServer, retryhttptest.Sequence(retryhttptest.CloseAfter(3 << 20)), 1},
		{"reset", retryhttptest.NewServer, retryhttptest.Sequence(retryhttptest.ResetAfter(3 << 20)), 1},
		{"closed then reset", retryhttptest.NewServer, retryhttptest.Sequence(retryhttptest.CloseAfter(2<<20), retryhttptest.ResetAfter(3<<20)), 2},
		{"HTTP/2 stream reset", retryhttptest.NewHTTP2Server, retryhttptest.Sequence(retryhttptest.ResetAfter(3 << 20)), 1},
		{"HTTP/2 twice", retryhttptest.NewHTTP2Server, retryhttptest.Sequence(retryhttptest.CloseAfter(1<<20), retryhttptest.CloseAfter(1<<20)), 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFile(version{body: eightMiB, etag: `"v1"`})
			srv := tt.start(f, tt.fault)
			defer srv.Close()
			var offsets []int64
			tr := newResumingTransport(srv.Client().Transport, retryhttp.WithOnRetry(func(e retryhttp.RetryEvent) {
				assert.True(t, e.Resume, "a retry after the headers is a resume")
				offsets = append(offsets, e.Offset)
			}))
			defer tr.CloseIdleConnections()

			got, err := readAll(t, t.Context(), tr, http.MethodGet, srv.URL+"/file")
			require.NoError(t, err)
			requireSame(t, eightMiB, got)

			ranges, ifRanges := f.requests()
			require.Len(t, ranges, tt.cuts+1, "one request, and one more per cut")
			require.Len(t, offsets, tt.cuts)
			assert.Empty(t, ranges[0])
			for i, off := range offsets {
				assert.Equal(t, "bytes="+strconv.FormatInt(off, 10)+"-", ranges[i+1], "the range of resume %d", i+1)
				assert.Equal(t, `"v1"`, ifRanges[i+1], "If-Range of resume %d", i+1)
				assert.Positive(t, off)
			}
		})
	}
}

// TestResumesAreCountedApart proves that what reaches the server is
// derivable from what retryhttp reports: Attempts counts the attempts of
// the request, up to its response headers, and each resume of its body
// is a RetryEvent with Resume set, so that the server's requests are
// Attempts plus the resumes the hook saw.
func TestResumesAreCountedApart(t *testing.T) {
	f := newFile(version{body: eightMiB, etag: `"v1"`})
	srv := retryhttptest.NewServer(f, retryhttptest.Sequence(retryhttptest.Status(http.StatusServiceUnavailable),
		retryhttptest.CloseAfter(2<<20), retryhttptest.ResetAfter(3<<20)))
	defer srv.Close()
	var retries, resumes int
	tr := newResumingTransport(srv.Client().Transport, retryhttp.WithOnRetry(func(e retryhttp.RetryEvent) {
		if e.Resume {
			resumes++
		} else {
			retries++
		}
	}))
	defer tr.CloseIdleConnections()
	req, err := http.NewRequest(http.MethodGet, srv.URL+"/file", nil)
	require.NoError(t, err)
	resp, err := tr.RoundTrip(req)
	require.NoError(t, err)
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	requireSame(t, eightMiB, got)
	assert.Equal(t, 2, retryhttp.Attempts(resp), "the 503 and the response")
	assert.Equal(t, 1, retries)
	assert.Equal(t, 2, resumes)
	assert.Equal(t, srv.Attempts(), retryhttp.Attempts(resp)+resumes, "the server's requests")
}

// TestResumeByLastModified resumes a body whose response has no ETag, by
// its Last-Modified, which is strong: a second or more before the Date.
func TestResumeByLastModified(t *testing.T) {
	f := newFile(version{body: eightMiB})
	srv := retryhttptest.NewServer(f, retryhttptest.Sequence(retryhttptest.CloseAfter(1<<20)))
	defer srv.Close()
	tr := newResumingTransport(srv.Client().Transport)
	defer tr.CloseIdleConnections()
	got, err := readAll(t, t.Context(), tr, http.MethodGet, srv.URL)
	require.NoError(t, err)
	requireSame(t, eightMiB, got)
	_, ifRanges := f.requests()
	assert.Equal(t, []string{"", time.Unix(1_700_000_000, 0).UTC().Format(http.TimeFormat)}, ifRanges)
}

// TestResumeAfterStall stalls a body after 1 MiB and checks that the
// caller reads it whole long before its 30 s deadline. The stall timeout
// is 2 s, far above any pause of a loopback transfer, so that no other
// read counts as stalled however loaded the machine; the default's timing
// is checked in a synctest bubble.
func TestResumeAfterStall(t *testing.T) {
	for _, start := range []func(http.Handler, retryhttptest.Fault, ...retryhttptest.Option) *retryhttptest.Server{retryhttptest.NewServer, retryhttptest.NewHTTP2Server} {
		f := newFile(version{body: eightMiB, etag: `"v1"`})
		srv := start(f, retryhttptest.Sequence(retryhttptest.StallAfter(1<<20)))
		tr := newResumingTransport(srv.Client().Transport, retryhttp.WithResume(resume.StallTimeout(2*time.Second)))
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		began := time.Now()
		got, err := readAll(t, ctx, tr, http.MethodGet, srv.URL)
		require.NoError(t, err)
		requireSame(t, eightMiB, got)
		assert.Less(t, time.Since(began), 20*time.Second, "read long before the deadline")
		ranges, _ := f.requests()
		require.GreaterOrEqual(t, len(ranges), 2)
		assert.Equal(t, "bytes=1048576-", ranges[1], "the rest, from where the stall began")
		cancel()
		tr.CloseIdleConnections()
		srv.Close()
	}
}

// TestResumeRefusesWhatItCannotVouchFor cuts bodies that may not be
// resumed, or whose resume would splice another representation, and checks
// that the caller gets a *resume.Error saying why, after only bytes of the
// body, and that no request was sent that should not be.
func TestResumeRefusesWhatItCannotVouchFor(t *testing.T) {
	other := content(8<<20, 2)
	tests := []struct {
		name     string
		versions []version
		method   string
		reason   resume.Reason
		requests int
	}{
		{"changed representation", []version{{body: eightMiB, etag: `"v1"`}, {body: other, etag: `"v2"`}}, http.MethodGet, resume.Changed, 2},
		{"weak ETag", []version{{body: eightMiB, etag: `W/"v1"`}}, http.MethodGet, resume.WeakValidator, 1},
		{"gzip decoded", []version{{body: eightMiB[:2<<20], etag: `"v1"`, gzip: true}}, http.MethodGet, resume.Decoded, 1},
		{"key-less POST", []version{{body: eightMiB, etag: `"v1"`}}, http.MethodPost, resume.Method, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFile(tt.versions...)
			srv := retryhttptest.NewServer(f, retryhttptest.Sequence(retryhttptest.CloseAfter(1<<20)))
			defer srv.Close()
			var gaveUp []retryhttp.GiveUpEvent
			tr := newResumingTransport(srv.Client().Transport, retryhttp.WithOnGiveUp(func(e retryhttp.GiveUpEvent) { gaveUp = append(gaveUp, e) }))
			defer tr.CloseIdleConnections()

			got, err := readAll(t, t.Context(), tr, tt.method, srv.URL)
			var rerr *resume.Error
			require.ErrorAs(t, err, &rerr)
			assert.Equal(t, tt.reason, rerr.Reason)
			assert.ErrorIs(t, err, io.ErrUnexpectedEOF, "the cut is still the cause")
			assert.Equal(t, int64(len(got)), rerr.Offset)
			// The caller of a decoded body reads it decoded: a prefix of
			// the plain one too.
			requirePrefixOf(t, eightMiB, got)
			assert.Equal(t, tt.requests, srv.Attempts(), "requests sent")
			assert.Equal(t, tt.requests, srv.Executions(), "requests run")
			if tt.reason != resume.Changed {
				require.Len(t, gaveUp, 1)
				assert.Equal(t, retryhttp.GiveUpNotResumable, gaveUp[0].Reason)
				assert.True(t, gaveUp[0].Resume)
			}
		})
	}
}

// TestResumeCutsOfEveryBodyAreBounded checks that a host that cuts every
// body gets resumes until each body's limit, and then, across bodies,
// until its budget is spent: about 100 with the default budget.
func TestResumeCutsOfEveryBodyAreBounded(t *testing.T) {
	f := newFile(version{body: content(64<<10, 3), etag: `"v1"`})
	srv := retryhttptest.NewServer(f, retryhttptest.CloseAfter(4096))
	defer srv.Close()
	tr := newResumingTransport(srv.Client().Transport, retryhttp.WithBackoff(backoff.Constant(0)))
	defer tr.CloseIdleConnections()

	var reasons []retryhttp.GiveUpReason
	for range 30 {
		_, err := readAll(t, t.Context(), tr, http.MethodGet, srv.URL)
		var rerr *resume.Error
		require.ErrorAs(t, err, &rerr)
		require.Equal(t, resume.GaveUp, rerr.Reason)
		reasons = append(reasons, rerr.GiveUp)
	}
	resumes := srv.Attempts() - 30
	// 500 tokens, a resume costing 5, each body's first response
	// refunding 1: at most (500 + 30) / 5 resumes.
	assert.LessOrEqual(t, resumes, 106)
	assert.GreaterOrEqual(t, resumes, 100)
	assert.Equal(t, retryhttp.GiveUpResumeLimit, reasons[0], "a body gets at most 10 resumes")
	assert.Equal(t, retryhttp.GiveUpBudgetExhausted, reasons[len(reasons)-1], "then the budget says no")
}

// TestResumeOffForTransportAndCall checks WithoutResume, NoResume and
// MaxAttempts(ctx, 1): the cut reaches the caller as net/http reports it.
func TestResumeOffForTransportAndCall(t *testing.T) {
	tests := []struct {
		name string
		opts []retryhttp.Option
		ctx  func(context.Context) context.Context
	}{
		{"WithoutResume", []retryhttp.Option{retryhttp.WithoutResume()}, nil},
		{"WithMaxAttempts(1)", []retryhttp.Option{retryhttp.WithMaxAttempts(1)}, nil},
		{"NoResume", nil, retryhttp.NoResume},
		{"MaxAttempts 1", nil, func(ctx context.Context) context.Context { return retryhttp.MaxAttempts(ctx, 1) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := retryhttptest.NewServer(newFile(version{body: eightMiB, etag: `"v1"`}), retryhttptest.Sequence(retryhttptest.CloseAfter(1<<20)))
			defer srv.Close()
			tr := newResumingTransport(srv.Client().Transport, tt.opts...)
			defer tr.CloseIdleConnections()
			ctx := t.Context()
			if tt.ctx != nil {
				ctx = tt.ctx(ctx)
			}
			got, err := readAll(t, ctx, tr, http.MethodGet, srv.URL)
			require.ErrorIs(t, err, io.ErrUnexpectedEOF)
			var rerr *resume.Error
			assert.False(t, errors.As(err, &rerr), "not resumed, and no explanation needed")
			requirePrefixOf(t, eightMiB, got)
			assert.Equal(t, 1, srv.Attempts())
		})
	}
}

// TestResumeLeavesTheAddressThatFailed serves one file from two addresses
// of a host name, the first of which cuts every body, and checks that the
// resume goes to the second, through the base.Dialer the default base dials
// with: the caller reads the whole body, and the first address saw one
// request.
func TestResumeLeavesTheAddressThatFailed(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	addrs := resolver{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("127.0.0.2")}
	lns, port := listenAll(t, addrs)
	servers := make([]*retryhttptest.Server, 2)
	for i, fault := range []retryhttptest.Fault{retryhttptest.CloseAfter(1 << 20), retryhttptest.Pass()} {
		servers[i] = retryhttptest.NewUnstartedServer(newFile(version{body: eightMiB, etag: `"v1"`}), fault)
		servers[i].Listener.Close()
		servers[i].Listener = lns[i]
		servers[i].Start()
		defer servers[i].Close()
	}
	dialing := &http.Transport{DialContext: (&base.Dialer{Resolver: addrs}).DialContext}
	defer dialing.CloseIdleConnections()
	var peers []netip.AddrPort
	tr := newResumingTransport(dialing, retryhttp.WithOnRetry(func(e retryhttp.RetryEvent) { peers = append(peers, e.Peer) }))

	got, err := readAll(t, t.Context(), tr, http.MethodGet, "http://files.test:"+port+"/file")
	require.NoError(t, err)
	requireSame(t, eightMiB, got)
	assert.Equal(t, 1, servers[0].Attempts(), "requests to the address that cut the body")
	assert.Equal(t, 1, servers[1].Attempts(), "requests to the other")
	require.Len(t, peers, 1)
	assert.Equal(t, "127.0.0.1:"+port, peers[0].String(), "the resume's event names the peer that failed")
}
