package retryhttp_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/iotest"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/backoff"
	"github.com/retryhttp/retryhttp/base"
	"github.com/retryhttp/retryhttp/budget"
	"github.com/retryhttp/retryhttp/classify"
	"github.com/retryhttp/retryhttp/deadline"
	"github.com/retryhttp/retryhttp/hedge"
	"github.com/retryhttp/retryhttp/resume"
	"github.com/retryhttp/retryhttp/retryhttptest"
)

// oneMiB is the body of the in-memory tests of resumption.
var oneMiB = content(1<<20, 4)

// fetch sends a GET of url through rt under ctx and returns the response.
func fetch(t *testing.T, ctx context.Context, rt http.RoundTripper, url string, header ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	require.NoError(t, err)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := rt.RoundTrip(req)
	require.NoError(t, err)
	return resp
}

// readBody reads resp's body whole and closes it.
func readBody(resp *http.Response) ([]byte, error) {
	defer resp.Body.Close()
	return io.ReadAll(resp.Body)
}

// TestStallIsResumedAfterTheTimeout stalls a body after 1 MiB in memory and
// checks, on synctest's clock, that the read is resumed after the default
// stall timeout, and no more than a quarter of it later.
func TestStallIsResumedAfterTheTimeout(t *testing.T) {
	const stallTimeout = 10 * time.Second // the default, as resume.StallTimeout says
	synctest.Test(t, func(t *testing.T) {
		f := newFile(version{body: eightMiB, etag: `"v1"`})
		base := retryhttptest.NewTransport(f, retryhttptest.Sequence(retryhttptest.StallAfter(1<<20)))
		var events []retryhttp.RetryEvent
		var at time.Duration
		start := time.Now()
		tr := retryhttp.New(retryhttp.WithBase(base), retryhttp.WithBackoff(backoff.Constant(0)),
			retryhttp.WithOnRetry(func(e retryhttp.RetryEvent) { events, at = append(events, e), time.Since(start) }))
		got, err := readBody(fetch(t, t.Context(), tr, "http://files.test/big"))
		require.NoError(t, err)
		requireSame(t, eightMiB, got)
		require.Len(t, events, 1)
		assert.GreaterOrEqual(t, at, stallTimeout)
		assert.LessOrEqual(t, at, stallTimeout*5/4)
		e := events[0]
		assert.True(t, e.Resume)
		assert.Equal(t, int64(1<<20), e.Offset)
		assert.ErrorIs(t, e.Err, resume.ErrStalled)
		assert.True(t, e.Verdict.Timeout, "a stall is a timeout")
		assert.Equal(t, 1, e.Attempt)
		ranges, _ := f.requests()
		assert.Equal(t, []string{"", "bytes=1048576-"}, ranges)
	})
}

// slowBody is a response body that pauses before each read, as a server
// that streams events does.
type slowBody struct {
	data  []byte
	pause time.Duration
}

func (b *slowBody) Read(p []byte) (int, error) {
	if len(b.data) == 0 {
		return 0, io.EOF
	}
	time.Sleep(b.pause)
	n := copy(p, b.data[:min(len(b.data), 10)])
	b.data = b.data[n:]
	return n, nil
}

func (b *slowBody) Close() error { return nil }

// TestStallNeverWatchesWhatCannotBeResumed checks that a body that cannot
// be resumed may sit idle far longer than the stall timeout: a stream of
// events without range support, and one whose ETag is weak.
func TestStallNeverWatchesWhatCannotBeResumed(t *testing.T) {
	for _, h := range []http.Header{
		{"Content-Type": {"text/event-stream"}},
		{"Accept-Ranges": {"bytes"}, "Etag": {`W/"v1"`}, "Content-Length": {"30"}},
	} {
		synctest.Test(t, func(t *testing.T) {
			var sent atomic.Int32
			tr := retryhttp.New(retryhttp.WithBase(roundTripperFunc(func(r *http.Request) (*http.Response, error) {
				sent.Add(1)
				return &http.Response{StatusCode: 200, Header: h, ContentLength: 30, Request: r,
					Body: &slowBody{data: bytes.Repeat([]byte("e"), 30), pause: 5 * time.Minute}}, nil
			})))
			start := time.Now()
			got, err := readBody(fetch(t, t.Context(), tr, "http://events.test/"))
			require.NoError(t, err)
			assert.Len(t, got, 30)
			assert.Equal(t, 15*time.Minute, time.Since(start))
			assert.Equal(t, int32(1), sent.Load())
		})
	}
}

// TestStallCountsOnlyTheWaitInRead checks that a caller who takes its time
// between reads of a resumable body is not taken for a stall.
func TestStallCountsOnlyTheWaitInRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := retryhttptest.NewTransport(newFile(version{body: oneMiB, etag: `"v1"`}), retryhttptest.Pass())
		tr := retryhttp.New(retryhttp.WithBase(base))
		resp := fetch(t, t.Context(), tr, "http://files.test/")
		defer resp.Body.Close()
		var got []byte
		buf := make([]byte, 100<<10)
		for {
			n, err := resp.Body.Read(buf)
			got = append(got, buf[:n]...)
			if err == io.EOF {
				break
			}
			require.NoError(t, err)
			time.Sleep(time.Minute) // the caller's own work
		}
		requireSame(t, oneMiB, got)
		assert.Equal(t, 1, base.Attempts())
	})
}

// TestDeadlineEndsTheRead checks, on synctest's clock, that a body whose
// every attempt fails (stalled, or cut) is read no longer than the
// request's 2 s deadline allows.
func TestDeadlineEndsTheRead(t *testing.T) {
	tests := []struct {
		name  string
		fault retryhttptest.Fault
		opts  []retryhttp.Option
	}{
		{"stalled, the default stall timeout", retryhttptest.StallAfter(1 << 20), nil},
		{"stalled, resumed every 500 ms", retryhttptest.StallAfter(1 << 20), []retryhttp.Option{retryhttp.WithResume(resume.StallTimeout(500*time.Millisecond), resume.Limit(100))}},
		// 128 parts: the default backoff's waits add up to far more
		// than 2 s, whatever their jitter.
		{"cut, after backoff", retryhttptest.CloseAfter(1 << 16), []retryhttp.Option{retryhttp.WithResume(resume.Limit(1000)), retryhttp.WithoutBudget()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				base := retryhttptest.NewTransport(newFile(version{body: eightMiB, etag: `"v1"`}), tt.fault)
				tr := retryhttp.New(append([]retryhttp.Option{retryhttp.WithBase(base)}, tt.opts...)...)
				ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
				defer cancel()
				start := time.Now()
				got, err := readBody(fetch(t, ctx, tr, "http://files.test/"))
				elapsed := time.Since(start)
				require.Error(t, err)
				requirePrefixOf(t, eightMiB, got)
				assert.LessOrEqual(t, elapsed, 2*time.Second)
				var rerr *resume.Error
				if errors.As(err, &rerr) {
					assert.Equal(t, resume.GaveUp, rerr.Reason)
					assert.Contains(t, []retryhttp.GiveUpReason{retryhttp.GiveUpDeadline, retryhttp.GiveUpCanceled}, rerr.GiveUp)
					if rerr.GiveUp == retryhttp.GiveUpDeadline {
						// Given up before the deadline: the wait
						// would have passed it.
						return
					}
				}
				assert.ErrorIs(t, err, context.DeadlineExceeded)
				assert.Equal(t, 2*time.Second, elapsed)
			})
		})
	}
}

// gate is a base that answers the first request from a file and blocks
// every later one until its context ends.
type gate struct {
	first http.RoundTripper
	sent  atomic.Int32
}

func (g *gate) RoundTrip(r *http.Request) (*http.Response, error) {
	if g.sent.Add(1) == 1 {
		return g.first.RoundTrip(r)
	}
	<-r.Context().Done()
	return nil, r.Context().Err()
}

// TestCloseStopsEverything closes a body from another goroutine while its
// Read waits on the server, on a resume's backoff, and on a resume's
// headers, and checks that the Read returns at once and that nothing is
// left running (synctest fails a test whose goroutines outlive it).
func TestCloseStopsEverything(t *testing.T) {
	tests := []struct {
		name string
		base func() http.RoundTripper
		opts []retryhttp.Option
	}{
		{"waiting on the server", func() http.RoundTripper {
			return retryhttptest.NewTransport(newFile(version{body: oneMiB, etag: `"v1"`}), retryhttptest.StallAfter(1000))
		}, []retryhttp.Option{retryhttp.WithResume(resume.StallTimeout(0))}},
		{"waiting out a resume's backoff", func() http.RoundTripper {
			return retryhttptest.NewTransport(newFile(version{body: oneMiB, etag: `"v1"`}), retryhttptest.CloseAfter(1000))
		}, []retryhttp.Option{retryhttp.WithBackoff(backoff.Constant(time.Hour))}},
		{"waiting on a resume's headers", func() http.RoundTripper {
			return &gate{first: retryhttptest.NewTransport(newFile(version{body: oneMiB, etag: `"v1"`}), retryhttptest.CloseAfter(1000))}
		}, []retryhttp.Option{retryhttp.WithResume(resume.StallTimeout(0))}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tr := retryhttp.New(append([]retryhttp.Option{retryhttp.WithBase(tt.base())}, tt.opts...)...)
				resp := fetch(t, t.Context(), tr, "http://files.test/")
				buf := make([]byte, 1000)
				_, err := io.ReadFull(resp.Body, buf)
				require.NoError(t, err)
				done := make(chan error, 1)
				go func() {
					_, err := resp.Body.Read(buf)
					done <- err
				}()
				synctest.Wait()
				require.Empty(t, done, "the read waits")
				start := time.Now()
				require.NoError(t, resp.Body.Close())
				err = <-done
				assert.Error(t, err)
				assert.Zero(t, time.Since(start), "the read returned at once")
				assert.NoError(t, resp.Body.Close(), "a second Close does nothing")
				_, err = resp.Body.Read(buf)
				assert.Error(t, err, "a closed body fails reads")
			})
		})
	}
}

// countingBase counts the closes of the bodies of the responses of its
// base.
type countingBase struct {
	base   http.RoundTripper
	mu     sync.Mutex
	bodies []*closeCounter
}

type closeCounter struct {
	io.ReadCloser
	closes atomic.Int32
}

func (c *closeCounter) Close() error {
	c.closes.Add(1)
	return c.ReadCloser.Close()
}

func (c *countingBase) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.base.RoundTrip(r)
	if err == nil {
		cc := &closeCounter{ReadCloser: resp.Body}
		resp.Body = cc
		c.mu.Lock()
		c.bodies = append(c.bodies, cc)
		c.mu.Unlock()
	}
	return resp, err
}

// closes returns how many times each body was closed.
func (c *countingBase) closes() []int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var n []int32
	for _, b := range c.bodies {
		n = append(n, b.closes.Load())
	}
	return n
}

// TestReadAndCloseRace closes a body that is being resumed, read and
// stalled, at every point synctest can stop at, and checks that every
// body the base gave is closed exactly once. Run with -race.
func TestReadAndCloseRace(t *testing.T) {
	for _, closeAfter := range []time.Duration{0, time.Millisecond, 100 * time.Millisecond, 2 * time.Second, 3 * time.Second, time.Minute} {
		synctest.Test(t, func(t *testing.T) {
			f := newFile(version{body: oneMiB, etag: `"v1"`})
			base := &countingBase{base: retryhttptest.NewTransport(f, retryhttptest.Sequence(retryhttptest.CloseAfter(1000), retryhttptest.StallAfter(1000)))}
			tr := retryhttp.New(retryhttp.WithBase(base), retryhttp.WithBackoff(backoff.Constant(time.Millisecond)), retryhttp.WithResume(resume.StallTimeout(2*time.Second)))
			resp := fetch(t, t.Context(), tr, "http://files.test/")
			done := make(chan struct{})
			go func() {
				defer close(done)
				io.Copy(io.Discard, resp.Body)
			}()
			time.Sleep(closeAfter)
			resp.Body.Close()
			<-done
			for i, n := range base.closes() {
				assert.Equal(t, int32(1), n, "closes of body %d, closed after %v", i+1, closeAfter)
			}
		})
	}
}

// reprDigest returns a Repr-Digest field value for body.
func reprDigest(body []byte) string {
	sum := sha256.Sum256(body)
	return "sha-256=:" + base64.StdEncoding.EncodeToString(sum[:]) + ":"
}

// withHeader answers with h's response, with the header field set first.
func withHeader(h http.Handler, name, value string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(name, value)
		h.ServeHTTP(w, r)
	})
}

// TestDigestOfTheJoinedBody checks the joined body against its
// Repr-Digest: a match reads to the end, a mismatch fails the read that
// would have completed the body, whether or not the body was resumed.
func TestDigestOfTheJoinedBody(t *testing.T) {
	tests := []struct {
		name   string
		digest string
		fault  retryhttptest.Fault
		ok     bool
	}{
		{"resumed, matching", reprDigest(oneMiB), retryhttptest.Sequence(retryhttptest.CloseAfter(300_000)), true},
		{"resumed, not matching", reprDigest(eightMiB), retryhttptest.Sequence(retryhttptest.CloseAfter(300_000)), false},
		{"whole, not matching", reprDigest(eightMiB), retryhttptest.Pass(), false},
		{"an algorithm not checked", "md5=:AAAAAAAAAAAAAAAAAAAAAA==:", retryhttptest.Sequence(retryhttptest.CloseAfter(300_000)), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := withHeader(newFile(version{body: oneMiB, etag: `"v1"`}), "Repr-Digest", tt.digest)
			tr := retryhttp.New(retryhttp.WithBase(retryhttptest.NewTransport(h, tt.fault)))
			got, err := readBody(fetch(t, t.Context(), tr, "http://files.test/"))
			if tt.ok {
				require.NoError(t, err)
				requireSame(t, oneMiB, got)
				return
			}
			// The Read that would complete the body fails instead: its
			// bytes are held back, so the caller never has them all.
			requirePrefixOf(t, oneMiB, got)
			assert.Less(t, len(got), len(oneMiB))
			var rerr *resume.Error
			require.ErrorAs(t, err, &rerr)
			assert.Equal(t, resume.DigestMismatch, rerr.Reason)
			assert.Equal(t, int64(len(got)), rerr.Offset, "the bytes the caller received")
		})
	}
}

// TestLengthOfTheJoinedBody checks a body against its Content-Length: a
// base whose body ends early is resumed for the rest, one whose body runs
// longer fails the read past the announced end.
func TestLengthOfTheJoinedBody(t *testing.T) {
	body := []byte("0123456789")
	var ranges []string
	base := roundTripperFunc(func(r *http.Request) (*http.Response, error) {
		ranges = append(ranges, r.Header.Get("Range"))
		h := http.Header{"Accept-Ranges": {"bytes"}, "Etag": {`"v1"`}}
		if r.Header.Get("Range") == "bytes=6-" {
			h.Set("Content-Range", "bytes 6-9/10")
			return &http.Response{StatusCode: 206, Header: h, ContentLength: 4, Body: io.NopCloser(bytes.NewReader(body[6:])), Request: r}, nil
		}
		return &http.Response{StatusCode: 200, Header: h, ContentLength: 10, Body: io.NopCloser(bytes.NewReader(body[:6])), Request: r}, nil
	})
	tr := retryhttp.New(retryhttp.WithBase(base), retryhttp.WithBackoff(backoff.Constant(0)))
	got, err := readBody(fetch(t, t.Context(), tr, "http://files.test/"))
	require.NoError(t, err)
	assert.Equal(t, body, got)
	assert.Equal(t, []string{"", "bytes=6-"}, ranges, "an early end is a cut")

	long := roundTripperFunc(func(r *http.Request) (*http.Response, error) {
		h := http.Header{"Accept-Ranges": {"bytes"}, "Etag": {`"v1"`}}
		return &http.Response{StatusCode: 200, Header: h, ContentLength: 6, Body: io.NopCloser(bytes.NewReader(body)), Request: r}, nil
	})
	tr = retryhttp.New(retryhttp.WithBase(long))
	got, err = readBody(fetch(t, t.Context(), tr, "http://files.test/"))
	var rerr *resume.Error
	require.ErrorAs(t, err, &rerr)
	assert.Equal(t, resume.WrongLength, rerr.Reason)
	assert.Equal(t, body[:6], got, "the announced bytes, and no more")
}

// TestResumeOfTheCallersRange resumes a 206 answering the caller's own
// Range: the rest is asked for within it.
func TestResumeOfTheCallersRange(t *testing.T) {
	f := newFile(version{body: oneMiB, etag: `"v1"`})
	tr := retryhttp.New(retryhttp.WithBase(retryhttptest.NewTransport(f, retryhttptest.Sequence(retryhttptest.CloseAfter(1000)))),
		retryhttp.WithBackoff(backoff.Constant(0)))
	resp := fetch(t, t.Context(), tr, "http://files.test/", "Range", "bytes=5000-14999")
	require.Equal(t, http.StatusPartialContent, resp.StatusCode)
	got, err := readBody(resp)
	require.NoError(t, err)
	requireSame(t, oneMiB[5000:15000], got)
	ranges, ifRanges := f.requests()
	assert.Equal(t, []string{"bytes=5000-14999", "bytes=6000-14999"}, ranges)
	assert.Equal(t, `"v1"`, ifRanges[1])
}

// TestResumeAnswers checks what the caller gets for each answer to the
// request for the rest.
func TestResumeAnswers(t *testing.T) {
	cut := retryhttptest.Sequence(retryhttptest.CloseAfter(1000))
	tests := []struct {
		name   string
		answer http.HandlerFunc // answers requests for the rest; nil: the file does
		reason resume.Reason
		status int
		sent   int
	}{
		{"206", nil, "", 0, 2},
		{"503 then 206", func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "busy", http.StatusServiceUnavailable)
		}, "", 0, 3},
		{"416", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Range", "bytes */10")
			w.WriteHeader(http.StatusRequestedRangeNotSatisfiable)
		}, resume.Refused, 416, 2},
		{"403, a signature refused", func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "SignatureDoesNotMatch", http.StatusForbidden)
		}, resume.Refused, 403, 2},
		{"206 of another representation, If-Range ignored", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("ETag", `"v2"`)
			w.Header().Set("Content-Range", "bytes 1000-"+strconv.Itoa(len(oneMiB)-1)+"/"+strconv.Itoa(len(oneMiB)))
			w.WriteHeader(http.StatusPartialContent)
			w.Write(eightMiB[1000:len(oneMiB)])
		}, resume.Changed, 206, 2},
		{"206 from the start", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("ETag", `"v1"`)
			w.Header().Set("Content-Range", "bytes 0-"+strconv.Itoa(len(oneMiB)-1)+"/"+strconv.Itoa(len(oneMiB)))
			w.WriteHeader(http.StatusPartialContent)
			w.Write(oneMiB)
		}, resume.Misaligned, 206, 2},
		{"304", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusNotModified)
		}, resume.Changed, 304, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFile(version{body: oneMiB, etag: `"v1"`})
			var answered atomic.Int32
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("Range") != "" && tt.answer != nil && answered.Add(1) == 1 {
					tt.answer(w, r)
					return
				}
				f.ServeHTTP(w, r)
			})
			base := retryhttptest.NewTransport(h, cut)
			tr := retryhttp.New(retryhttp.WithBase(base), retryhttp.WithBackoff(backoff.Constant(0)))
			got, err := readBody(fetch(t, t.Context(), tr, "http://files.test/"))
			assert.Equal(t, tt.sent, base.Attempts(), "requests sent")
			if tt.reason == "" {
				require.NoError(t, err)
				requireSame(t, oneMiB, got)
				return
			}
			requirePrefixOf(t, oneMiB, got)
			assert.Len(t, got, 1000, "no byte of the answer reaches the caller")
			var rerr *resume.Error
			require.ErrorAs(t, err, &rerr)
			assert.Equal(t, tt.reason, rerr.Reason)
			assert.Equal(t, tt.status, rerr.StatusCode)
			assert.Equal(t, 1, rerr.Resumes)
			assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
		})
	}
}

// TestSignedRangeIsToldInAdvance checks that a body whose request signs
// its Range is not resumed: the cut ends the read with the reason, and no
// request for the rest is sent, which would fail to verify.
func TestSignedRangeIsToldInAdvance(t *testing.T) {
	f := newFile(version{body: oneMiB, etag: `"v1"`})
	base := retryhttptest.NewTransport(f, retryhttptest.Sequence(retryhttptest.CloseAfter(1000)))
	tr := retryhttp.New(retryhttp.WithBase(base))
	resp := fetch(t, t.Context(), tr, "http://bucket.test/key", "Range", "bytes=0-99999",
		"Authorization", "AWS4-HMAC-SHA256 Credential=AKID/20260101/us-east-1/s3/aws4_request, SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, Signature=0f")
	_, err := readBody(resp)
	var rerr *resume.Error
	require.ErrorAs(t, err, &rerr)
	assert.Equal(t, resume.SignedRange, rerr.Reason)
	assert.Equal(t, 1, base.Attempts())
}

// TestResumesAreRetries checks what a resume shares with the retries: the
// limit, the budget (spent, and refunded once the body is whole), the
// hooks, the log, and the attempt number the base sees.
func TestResumesAreRetries(t *testing.T) {
	t.Run("limit", func(t *testing.T) {
		base := retryhttptest.NewTransport(newFile(version{body: oneMiB, etag: `"v1"`}), retryhttptest.CloseAfter(1000))
		var gaveUp []retryhttp.GiveUpEvent
		tr := retryhttp.New(retryhttp.WithBase(base), retryhttp.WithBackoff(backoff.Constant(0)), retryhttp.WithResume(resume.Limit(3)), retryhttp.WithOnGiveUp(func(e retryhttp.GiveUpEvent) { gaveUp = append(gaveUp, e) }))
		got, err := readBody(fetch(t, t.Context(), tr, "http://files.test/"))
		requirePrefixOf(t, oneMiB, got)
		assert.Len(t, got, 4000, "each part gives 1000 bytes")
		var rerr *resume.Error
		require.ErrorAs(t, err, &rerr)
		assert.Equal(t, retryhttp.GiveUpResumeLimit, rerr.GiveUp)
		assert.Equal(t, 3, rerr.Resumes)
		assert.Equal(t, 4, base.Attempts())
		require.Len(t, gaveUp, 1)
		assert.Equal(t, retryhttp.GiveUpEvent{Request: gaveUp[0].Request, Attempt: 4, Reason: retryhttp.GiveUpResumeLimit,
			Err: io.ErrUnexpectedEOF, Verdict: classify.Verdict{Decision: classify.Retry}, Resume: true, Offset: 4000}, gaveUp[0])
	})
	t.Run("budget", func(t *testing.T) {
		bucket := budget.NewBucket(budget.Capacity(20))
		base := retryhttptest.NewTransport(newFile(version{body: oneMiB, etag: `"v1"`}), retryhttptest.Sequence(retryhttptest.CloseAfter(1000)))
		tr := retryhttp.New(retryhttp.WithBase(base), retryhttp.WithBudget(bucket), retryhttp.WithBackoff(backoff.Constant(0)))
		resp := fetch(t, t.Context(), tr, "http://files.test/")
		buf := make([]byte, 1500)
		_, err := io.ReadFull(resp.Body, buf)
		require.NoError(t, err)
		assert.Equal(t, 15*budget.Token, bucket.Balance(), "one resume paid for")
		got, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		resp.Body.Close()
		requireSame(t, oneMiB, append(buf, got...))
		assert.Equal(t, 20*budget.Token, bucket.Balance(), "the resume refunded once the body is whole")
	})
	t.Run("hedged", func(t *testing.T) {
		for _, tt := range []struct {
			fault    retryhttptest.Fault
			ranges   []string
			attempts int
			why      string
		}{
			{retryhttptest.Sequence(retryhttptest.Delay(time.Second, retryhttptest.CloseAfter(1000))), []string{""}, 2,
				"the hedge won, and was not cut; the first attempt never reached the file"},
			{retryhttptest.Sequence(retryhttptest.CloseAfter(1000)), []string{"", "bytes=1000-"}, 2,
				"the first attempt won, was cut, and was resumed"},
		} {
			synctest.Test(t, func(t *testing.T) {
				f := newFile(version{body: oneMiB, etag: `"v1"`})
				base := retryhttptest.NewTransport(f, tt.fault)
				tr := retryhttp.New(retryhttp.WithBase(base), retryhttp.WithHedging(hedge.Delay(100*time.Millisecond)),
					retryhttp.WithBackoff(backoff.Constant(0)))
				got, err := readBody(fetch(t, t.Context(), tr, "http://files.test/"))
				require.NoError(t, err)
				requireSame(t, oneMiB, got)
				ranges, _ := f.requests()
				assert.Equal(t, tt.ranges, ranges, tt.why)
				assert.Equal(t, tt.attempts, base.Attempts())
			})
		}
	})
	t.Run("deadline and attempt headers", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			base := retryhttptest.NewTransport(newFile(version{body: oneMiB, etag: `"v1"`}), retryhttptest.Sequence(retryhttptest.ResetAfter(1000)))
			type sent struct{ rng, deadline, attempt string }
			var got []sent
			recording := roundTripperFunc(func(r *http.Request) (*http.Response, error) {
				got = append(got, sent{r.Header.Get("Range"), r.Header.Get("X-Time-Left"), r.Header.Get("X-Attempt")})
				return base.RoundTrip(r)
			})
			tr := retryhttp.New(retryhttp.WithBase(recording), retryhttp.WithBackoff(backoff.Constant(time.Second)),
				retryhttp.WithDeadlineHeader(deadline.Milliseconds("X-Time-Left")), retryhttp.WithAttemptHeader("X-Attempt"))
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			body, err := readBody(fetch(t, ctx, tr, "http://files.test/f"))
			require.NoError(t, err)
			requireSame(t, oneMiB, body)
			assert.Equal(t, []sent{{"", "10000", "1/3"}, {"bytes=1000-", "9000", "2/11"}}, got,
				"the request for the rest says the time left after its wait, and its number among the 1 + 10 a body may make")
		})
	})
	t.Run("hooks, log and attempt numbers", func(t *testing.T) {
		var numbers []int
		files := retryhttptest.NewTransport(newFile(version{body: oneMiB, etag: `"v1"`}), retryhttptest.Sequence(retryhttptest.ResetAfter(1000)))
		numbered := roundTripperFunc(func(r *http.Request) (*http.Response, error) {
			numbers = append(numbers, base.Attempt(r.Context()))
			return files.RoundTrip(r)
		})
		var logs bytes.Buffer
		var events []retryhttp.RetryEvent
		tr := retryhttp.New(retryhttp.WithBase(numbered), retryhttp.WithBackoff(backoff.Constant(0)),
			retryhttp.WithLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))),
			retryhttp.WithOnRetry(func(e retryhttp.RetryEvent) { events = append(events, e) }))
		got, err := readBody(fetch(t, t.Context(), tr, "http://files.test/f?token=secret"))
		require.NoError(t, err)
		requireSame(t, oneMiB, got)
		assert.Equal(t, []int{1, 2}, numbers)
		require.Len(t, events, 1)
		assert.True(t, events[0].Resume)
		assert.Equal(t, int64(1000), events[0].Offset)
		assert.Zero(t, events[0].StatusCode)
		assert.Contains(t, logs.String(), `msg="retryhttp: resuming response body" method=GET url=http://files.test/f attempt=1`)
		assert.Contains(t, logs.String(), "offset=1000")
		assert.NotContains(t, logs.String(), "secret")
	})
}

// TestBytesThatComeWithAFailure checks that a read that returns bytes and
// a failure together gives the caller the bytes, and resumes at the next
// Read.
func TestBytesThatComeWithAFailure(t *testing.T) {
	body := []byte("0123456789")
	base := roundTripperFunc(func(r *http.Request) (*http.Response, error) {
		h := http.Header{"Accept-Ranges": {"bytes"}, "Etag": {`"v1"`}}
		if r.Header.Get("Range") == "bytes=6-" {
			h.Set("Content-Range", "bytes 6-9/10")
			return &http.Response{StatusCode: 206, Header: h, ContentLength: 4, Body: io.NopCloser(bytes.NewReader(body[6:])), Request: r}, nil
		}
		// Six bytes and io.EOF in one read: the body ends four bytes short.
		return &http.Response{StatusCode: 200, Header: h, ContentLength: 10, Body: io.NopCloser(iotest.DataErrReader(bytes.NewReader(body[:6]))), Request: r}, nil
	})
	tr := retryhttp.New(retryhttp.WithBase(base), retryhttp.WithBackoff(backoff.Constant(0)))
	resp := fetch(t, t.Context(), tr, "http://files.test/")
	defer resp.Body.Close()
	buf := make([]byte, 10)
	n, err := resp.Body.Read(buf)
	require.NoError(t, err, "the failure waits for the next Read")
	assert.Equal(t, body[:6], buf[:n])
	rest, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Equal(t, body[6:], rest)
}

// TestResumeRequestFails checks what a request for the rest that fails
// with an error, not a status, brings: another resume when the error is
// worth retrying, the end of the read with resume.Failed when it is not.
func TestResumeRequestFails(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: &net.OpError{Op: "connect", Err: syscall.ECONNREFUSED}}
	untrusted := &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}
	for _, tt := range []struct {
		name   string
		err    error
		reason resume.Reason
		sent   int
	}{
		{"a refused dial", refused, "", 3},
		{"a certificate not trusted", untrusted, resume.Failed, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			inner := retryhttptest.NewTransport(newFile(version{body: oneMiB, etag: `"v1"`}), retryhttptest.Sequence(retryhttptest.CloseAfter(1000)))
			var sent atomic.Int32
			base := roundTripperFunc(func(r *http.Request) (*http.Response, error) {
				if sent.Add(1) == 2 {
					return nil, tt.err
				}
				return inner.RoundTrip(r)
			})
			tr := retryhttp.New(retryhttp.WithBase(base), retryhttp.WithBackoff(backoff.Constant(0)))
			got, err := readBody(fetch(t, t.Context(), tr, "http://files.test/"))
			assert.Equal(t, int32(tt.sent), sent.Load(), "requests sent")
			if tt.reason == "" {
				require.NoError(t, err)
				requireSame(t, oneMiB, got)
				return
			}
			assert.Len(t, got, 1000)
			var rerr *resume.Error
			require.ErrorAs(t, err, &rerr)
			assert.Equal(t, tt.reason, rerr.Reason)
			assert.Equal(t, 1, rerr.Resumes)
			assert.ErrorIs(t, err, tt.err)
			assert.ErrorIs(t, err, io.ErrUnexpectedEOF, "the error that cut the body")
		})
	}
}

// TestResumeStallsOnItsHeaders checks that the stall timeout bounds a
// resume's wait for its response headers as it bounds a read: with one
// resume allowed, a request for the rest that gets no answer ends the read
// after the timeout, with resume.ErrStalled.
func TestResumeStallsOnItsHeaders(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := &gate{first: retryhttptest.NewTransport(newFile(version{body: oneMiB, etag: `"v1"`}), retryhttptest.CloseAfter(1000))}
		tr := retryhttp.New(retryhttp.WithBase(base), retryhttp.WithBackoff(backoff.Constant(0)), retryhttp.WithResume(resume.StallTimeout(time.Second), resume.Limit(1)))
		start := time.Now()
		got, err := readBody(fetch(t, t.Context(), tr, "http://files.test/"))
		elapsed := time.Since(start)
		assert.Len(t, got, 1000)
		var rerr *resume.Error
		require.ErrorAs(t, err, &rerr)
		assert.ErrorIs(t, err, resume.ErrStalled)
		assert.ErrorIs(t, err, io.ErrUnexpectedEOF, "the error that cut the body")
		assert.Equal(t, 1, rerr.Resumes)
		assert.Equal(t, int32(2), base.sent.Load())
		assert.GreaterOrEqual(t, elapsed, time.Second)
		assert.LessOrEqual(t, elapsed, time.Second*5/4)
	})
}

// TestResumeStalledOnItsHeadersIsRetried checks that a request for the
// rest whose headers stall is retried as a stalled read is: the next
// request for the rest is answered, and the read is whole, one stall
// timeout later.
func TestResumeStalledOnItsHeadersIsRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inner := retryhttptest.NewTransport(newFile(version{body: oneMiB, etag: `"v1"`}), retryhttptest.Sequence(retryhttptest.CloseAfter(1000)))
		var sent atomic.Int32
		base := roundTripperFunc(func(r *http.Request) (*http.Response, error) {
			if sent.Add(1) == 2 {
				<-r.Context().Done()
				return nil, r.Context().Err()
			}
			return inner.RoundTrip(r)
		})
		tr := retryhttp.New(retryhttp.WithBase(base), retryhttp.WithBackoff(backoff.Constant(0)), retryhttp.WithResume(resume.StallTimeout(time.Second)))
		start := time.Now()
		got, err := readBody(fetch(t, t.Context(), tr, "http://files.test/"))
		elapsed := time.Since(start)
		require.NoError(t, err)
		requireSame(t, oneMiB, got)
		assert.Equal(t, int32(3), sent.Load(), "the first request, the stalled request for the rest, and the one answered")
		assert.GreaterOrEqual(t, elapsed, time.Second)
		assert.LessOrEqual(t, elapsed, time.Second*5/4)
	})
}

// TestResumeEndsInItsBackoff checks a body whose request's context is
// cancelled, or which is closed, as a resume is about to wait its
// backoff: no request for the rest is sent, and the budget gets back what
// the resume took.
func TestResumeEndsInItsBackoff(t *testing.T) {
	for _, tt := range []struct {
		name   string
		cancel bool // the request's context, rather than the body
	}{
		{"context cancelled", true},
		{"body closed", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			bucket := budget.NewBucket(budget.Capacity(20))
			base := retryhttptest.NewTransport(newFile(version{body: oneMiB, etag: `"v1"`}), retryhttptest.Sequence(retryhttptest.CloseAfter(1000)))
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			var resp *http.Response
			var gaveUp []retryhttp.GiveUpEvent
			tr := retryhttp.New(retryhttp.WithBase(base), retryhttp.WithBudget(bucket), retryhttp.WithBackoff(backoff.Constant(0)),
				retryhttp.WithOnRetry(func(retryhttp.RetryEvent) {
					if tt.cancel {
						cancel()
					} else {
						resp.Body.Close()
					}
				}),
				retryhttp.WithOnGiveUp(func(e retryhttp.GiveUpEvent) { gaveUp = append(gaveUp, e) }))
			resp = fetch(t, ctx, tr, "http://files.test/")
			got, err := readBody(resp)
			assert.Len(t, got, 1000)
			require.Error(t, err)
			assert.Equal(t, 1, base.Attempts(), "no request for the rest")
			assert.Equal(t, 20*budget.Token, bucket.Balance(), "the resume refunded")
			if !tt.cancel {
				assert.Empty(t, gaveUp, "the caller closed the body: nothing given up")
				return
			}
			var rerr *resume.Error
			require.ErrorAs(t, err, &rerr)
			assert.Equal(t, resume.GaveUp, rerr.Reason)
			assert.Equal(t, retryhttp.GiveUpCanceled, rerr.GiveUp)
			assert.ErrorIs(t, err, context.Canceled)
			assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
			require.Len(t, gaveUp, 1)
			assert.Equal(t, retryhttp.GiveUpCanceled, gaveUp[0].Reason)
			assert.True(t, gaveUp[0].Resume)
		})
	}
}

// TestResumeAnsweredAfterClose checks that the answer to a request for the
// rest that arrives after the body was closed is closed, and not read.
func TestResumeAnsweredAfterClose(t *testing.T) {
	inner := retryhttptest.NewTransport(newFile(version{body: oneMiB, etag: `"v1"`}), retryhttptest.Sequence(retryhttptest.CloseAfter(1000)))
	var resp *http.Response
	base := &countingBase{base: roundTripperFunc(func(r *http.Request) (*http.Response, error) {
		if r.Header.Get("Range") == "" {
			return inner.RoundTrip(r)
		}
		resp.Body.Close()
		// A base that answers whatever the request's context says.
		return inner.RoundTrip(r.WithContext(context.WithoutCancel(r.Context())))
	})}
	tr := retryhttp.New(retryhttp.WithBase(base), retryhttp.WithBackoff(backoff.Constant(0)))
	resp = fetch(t, t.Context(), tr, "http://files.test/")
	got, err := io.ReadAll(resp.Body)
	assert.Len(t, got, 1000)
	require.Error(t, err)
	closes := base.closes()
	require.Len(t, closes, 2, "the first answer and the one for the rest")
	assert.Equal(t, []int32{1, 1}, closes, "each closed once")
}
