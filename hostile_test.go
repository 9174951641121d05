package retryhttp

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/iotest"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp/backoff"
	"github.com/retryhttp/retryhttp/budget"
	"github.com/retryhttp/retryhttp/deadline"
	"github.com/retryhttp/retryhttp/internal/deadlinefmt"
	"github.com/retryhttp/retryhttp/internal/wire"
	"github.com/retryhttp/retryhttp/resume"
	"github.com/retryhttp/retryhttp/retryhttptest"
	"github.com/retryhttp/retryhttp/server"
)

// The tests of this file answer the Transport as a hostile or careless peer
// would, over real loopback servers unless they test timing: lengths that
// overflow, digests that do not match, bodies that never end their stream,
// headers repeated under other spellings, deadlines too long to write,
// validators repeated or empty.

// A hostileProto is a protocol the loopback tests are run over.
type hostileProto struct {
	name  string
	major int
	start func(http.Handler, retryhttptest.Fault, ...retryhttptest.Option) *retryhttptest.Server
}

var (
	hostileHTTP1  = hostileProto{"HTTP/1", 1, retryhttptest.NewServer}
	hostileHTTP2  = hostileProto{"HTTP/2", 2, retryhttptest.NewHTTP2Server}
	hostileProtos = []hostileProto{hostileHTTP1, hostileHTTP2}
)

// hostileContent returns n bytes that do not compress, the same for the
// same seed.
func hostileContent(n int, seed uint64) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(seed, seed))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// hostileDigest returns a Repr-Digest field value for body.
func hostileDigest(body []byte) string {
	sum := sha256.Sum256(body)
	return "sha-256=:" + base64.StdEncoding.EncodeToString(sum[:]) + ":"
}

// hostileServe starts h on a loopback server of protocol p, whose attempts
// get f, and returns it with a Transport over the server's client
// transport, retries paced by a millisecond. Both are closed when the test
// ends.
func hostileServe(t *testing.T, p hostileProto, h http.Handler, f retryhttptest.Fault, opts ...Option) (*retryhttptest.Server, *Transport) {
	t.Helper()
	srv := p.start(h, f)
	t.Cleanup(srv.Close)
	tr := New(append([]Option{WithBase(srv.Client().Transport), WithBackoff(backoff.Constant(time.Millisecond))}, opts...)...)
	t.Cleanup(tr.CloseIdleConnections)
	return srv, tr
}

// hostileGet sends a GET of url through rt under ctx, its header edited by
// edit when not nil, and returns the response, spoken in p, whose body is
// closed when the test ends.
func hostileGet(t *testing.T, ctx context.Context, p hostileProto, rt http.RoundTripper, url string, edit func(http.Header)) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	require.NoError(t, err)
	if edit != nil {
		edit(req.Header)
	}
	resp, err := rt.RoundTrip(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	require.Equal(t, p.major, resp.ProtoMajor, "the response's protocol")
	return resp
}

// hostileRecorder records the header of every request a handler gets.
type hostileRecorder struct {
	mu   sync.Mutex
	seen []http.Header
}

// wrap returns h, recording each request's header first.
func (rec *hostileRecorder) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.mu.Lock()
		rec.seen = append(rec.seen, r.Header.Clone())
		rec.mu.Unlock()
		h.ServeHTTP(w, r)
	})
}

// headers returns the header of each request so far.
func (rec *hostileRecorder) headers() []http.Header {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]http.Header(nil), rec.seen...)
}

// hostileFile serves body through http.ServeContent with the ETag etag
// (none when ""), modified at mod (no Last-Modified when zero).
func hostileFile(body []byte, etag string, mod time.Time) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if etag != "" {
			w.Header().Set("ETag", etag)
		}
		http.ServeContent(w, r, "", mod, bytes.NewReader(body))
	})
}

// hostileReadAll reads r to its end, and returns what io.ReadAll returns
// and what a panic of a Read, if one panicked, was called with.
func hostileReadAll(r io.Reader) (got []byte, panicked any, err error) {
	defer func() { panicked = recover() }()
	got, err = io.ReadAll(r)
	return got, nil, err
}

// TestHostileContentRangeOverflow answers a plain GET with an unsolicited
// 206 that has no Content-Length and a Content-Range whose last byte is the
// largest int64, or a number past it, and checks that the caller reads the
// ten bytes sent, with no error, and that no Read panics: the length of
// such a range overflows an int64.
func TestHostileContentRangeOverflow(t *testing.T) {
	for _, p := range hostileProtos {
		for _, cr := range []string{"bytes 0-9223372036854775807/*", "bytes 0-99999999999999999999999/*"} {
			t.Run(p.name+" "+cr, func(t *testing.T) {
				h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
					w.Header().Set("Content-Range", cr)
					w.Header().Set("ETag", `"v1"`)
					w.WriteHeader(http.StatusPartialContent)
					io.WriteString(w, "0123456789")
					// Sent before the handler returns: no Content-Length.
					http.NewResponseController(w).Flush()
				})
				srv, tr := hostileServe(t, p, h, retryhttptest.Pass())
				resp := hostileGet(t, t.Context(), p, tr, srv.URL, nil)
				require.Equal(t, http.StatusPartialContent, resp.StatusCode)
				require.EqualValues(t, -1, resp.ContentLength)

				got, panicked, err := hostileReadAll(resp.Body)
				require.Nil(t, panicked, "a Read panicked")
				require.NoError(t, err)
				assert.Equal(t, "0123456789", string(got))
			})
		}
	}
}

// TestHostileDigestMismatchAtContentLength serves a 64 KiB body with a
// Repr-Digest that its bytes do not match: a cut body whose rest, under the
// same ETag, is other bytes, and a whole body that is not the digest's. It
// checks that a reader that stops at Content-Length (io.ReadFull,
// io.CopyN) gets the mismatch from the Read that completes the body: an
// error, fewer bytes than it asked for, and a resume.Error whose Offset is
// what it got. The bytes before that Read stream to the caller as they
// arrive: a digest of the whole vouches for nothing before the whole is in,
// and holding a body back until then would take memory without bound.
func TestHostileDigestMismatchAtContentLength(t *testing.T) {
	const size = 65536
	original := hostileContent(size, 1)
	other := hostileContent(size, 2)
	readers := []struct {
		name string
		read func(io.Reader) ([]byte, error)
	}{
		{"io.ReadFull", func(r io.Reader) ([]byte, error) {
			buf := make([]byte, size)
			n, err := io.ReadFull(r, buf)
			return buf[:n], err
		}},
		{"io.CopyN", func(r io.Reader) ([]byte, error) {
			var buf bytes.Buffer
			_, err := io.CopyN(&buf, r, size)
			return buf.Bytes(), err
		}},
	}
	cases := []struct {
		name     string
		fault    retryhttptest.Fault
		first    []byte // the first response's body; later ones get other
		sent     []byte // the bytes the server sent at each offset
		requests int
	}{
		{"cut, and the rest other bytes under the same ETag", retryhttptest.Sequence(retryhttptest.CloseAfter(20_000)), original,
			append(bytes.Clone(original[:20_000]), other[20_000:]...), 2},
		{"whole, not the digest's", retryhttptest.Pass(), other, other, 1},
	}
	for _, p := range hostileProtos {
		for _, tc := range cases {
			for _, rd := range readers {
				t.Run(p.name+" "+tc.name+" "+rd.name, func(t *testing.T) {
					var served atomic.Int32
					var rec hostileRecorder
					h := rec.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
						body := other
						if served.Add(1) == 1 {
							body = tc.first
						}
						w.Header().Set("Repr-Digest", hostileDigest(original))
						hostileFile(body, `"v1"`, time.Time{}).ServeHTTP(w, r)
					}))
					srv, tr := hostileServe(t, p, h, tc.fault)
					resp := hostileGet(t, t.Context(), p, tr, srv.URL, nil)
					require.Equal(t, http.StatusOK, resp.StatusCode)
					require.EqualValues(t, size, resp.ContentLength)

					got, err := rd.read(resp.Body)
					var rerr *resume.Error
					require.ErrorAs(t, err, &rerr, "the Read that completes the body reports the mismatch")
					assert.Equal(t, resume.DigestMismatch, rerr.Reason)
					assert.Less(t, len(got), size, "bytes the reader got")
					assert.Equal(t, int64(len(got)), rerr.Offset, "Offset is what the caller received")
					require.True(t, bytes.Equal(tc.sent[:len(got)], got), "a byte read is not the one the server sent at its offset")
					headers := rec.headers()
					require.Len(t, headers, tc.requests, "requests the server got")
					if tc.requests > 1 {
						assert.Equal(t, "bytes=20000-", headers[1].Get("Range"))
						assert.Equal(t, `"v1"`, headers[1].Get("If-Range"))
					}
				})
			}
		}
	}
}

// hostileEndErrBody is a response body whose Read that reaches its end
// returns err with the last bytes, as a connection that fails as the last
// bytes arrive does.
type hostileEndErrBody struct {
	io.ReadCloser
	left int64
	err  error
}

func (b *hostileEndErrBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	if n > 0 && b.left <= 0 {
		return n, b.err
	}
	return n, err
}

// TestHostileNoResumeOfNothing serves a resumable body whose last bytes
// arrive with an error, and checks that the caller reads it whole, with
// no error, and that no request for the rest (a Range from the body's
// end) is sent: nothing is missing.
func TestHostileNoResumeOfNothing(t *testing.T) {
	body := hostileContent(64<<10, 3)
	reset := &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
	for _, p := range hostileProtos {
		for _, cause := range []error{io.ErrUnexpectedEOF, reset} {
			t.Run(p.name+" "+cause.Error(), func(t *testing.T) {
				srv := p.start(hostileFile(body, `"v1"`, time.Time{}), retryhttptest.Pass())
				t.Cleanup(srv.Close)
				client := srv.Client().Transport
				base := rtFunc(func(r *http.Request) (*http.Response, error) {
					resp, err := client.RoundTrip(r)
					if err == nil {
						resp.Body = &hostileEndErrBody{ReadCloser: resp.Body, left: resp.ContentLength, err: cause}
					}
					return resp, err
				})
				tr := New(WithBase(base), WithBackoff(backoff.Constant(time.Millisecond)))
				t.Cleanup(tr.CloseIdleConnections)
				resp := hostileGet(t, t.Context(), p, tr, srv.URL, nil)

				got, err := io.ReadAll(resp.Body)
				require.NoError(t, err)
				require.True(t, bytes.Equal(body, got), "the bytes read are the body")
				assert.Equal(t, 1, srv.Attempts(), "requests the server got")
			})
		}
	}
}

// TestHostileFinishedBodyNeverEnded serves every byte a response announced
// (by Content-Length, or only by Content-Range) and then neither ends the
// stream nor closes the connection, and checks that the caller reads the
// body whole, with no error, before its context's 10 s deadline, the
// stall timeout being 200 ms. Over HTTP/1 a Content-Length ends the body by
// itself; the other cases need the Transport to stop at the announced
// length.
func TestHostileFinishedBodyNeverEnded(t *testing.T) {
	const size = 64 << 10
	body := hostileContent(size, 4)
	whole := "bytes 0-" + strconv.Itoa(size-1) + "/" + strconv.Itoa(size)
	tests := []struct {
		name   string
		p      hostileProto
		header http.Header // the caller's
		status int
		resp   http.Header
	}{
		{"HTTP/2, Content-Length", hostileHTTP2, nil, http.StatusOK,
			http.Header{"Content-Length": {strconv.Itoa(size)}}},
		{"HTTP/1, Content-Length", hostileHTTP1, nil, http.StatusOK,
			http.Header{"Content-Length": {strconv.Itoa(size)}}},
		{"HTTP/2, unsolicited 206 without Content-Length", hostileHTTP2, nil, http.StatusPartialContent,
			http.Header{"Content-Range": {whole}}},
		{"HTTP/2, 206 of the caller's Range without Content-Length", hostileHTTP2, http.Header{"Range": {"bytes=0-" + strconv.Itoa(size-1)}}, http.StatusPartialContent,
			http.Header{"Content-Range": {whole}}},
		{"HTTP/1, unsolicited 206 without Content-Length", hostileHTTP1, nil, http.StatusPartialContent,
			http.Header{"Content-Range": {whole}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			release := make(chan struct{})
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				for k, v := range tt.resp {
					w.Header()[k] = v
				}
				w.Header().Set("Accept-Ranges", "bytes")
				w.Header().Set("ETag", `"v1"`)
				w.WriteHeader(tt.status)
				w.Write(body)
				http.NewResponseController(w).Flush()
				select {
				case <-release:
				case <-r.Context().Done():
				}
			})
			srv, tr := hostileServe(t, tt.p, h, retryhttptest.Pass(), WithResume(resume.StallTimeout(200*time.Millisecond)))
			t.Cleanup(func() { close(release) })
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			resp := hostileGet(t, ctx, tt.p, tr, srv.URL, func(h http.Header) {
				for k, v := range tt.header {
					h[k] = v
				}
			})
			require.Equal(t, tt.status, resp.StatusCode)

			began := time.Now()
			got, err := io.ReadAll(resp.Body)
			require.NoError(t, ctx.Err(), "the read ended with the context, after %v", time.Since(began))
			require.NoError(t, err)
			require.True(t, bytes.Equal(body, got), "the bytes read are the body")
		})
	}
}

// TestHostileOneValuePerHeader has the caller write headers the Transport
// sets too under keys that are not canonical ("range", "grpc-timeout"),
// which net/http sends as they are, and checks that the server gets one
// value of each on every request: the caller's Range, the Transport's
// deadline and attempt headers, and, on a request for the rest, the
// caller's Accept-Encoding.
func TestHostileOneValuePerHeader(t *testing.T) {
	for _, p := range hostileProtos {
		t.Run(p.name+" range", func(t *testing.T) {
			file := hostileContent(100_000, 5)
			var rec hostileRecorder
			srv, tr := hostileServe(t, p, rec.wrap(hostileFile(file, `"v1"`, time.Time{})), retryhttptest.Sequence(retryhttptest.CloseAfter(30_000)))
			resp := hostileGet(t, t.Context(), p, tr, srv.URL, func(h http.Header) { h["range"] = []string{"bytes=100-"} })
			require.Equal(t, http.StatusPartialContent, resp.StatusCode)

			got, err := io.ReadAll(resp.Body)
			headers := rec.headers()
			require.Len(t, headers, 2, "the request, and one for the rest")
			for i, h := range headers {
				assert.Len(t, h.Values("Range"), 1, "Range values of request %d: %q", i+1, h.Values("Range"))
				assert.LessOrEqual(t, len(h.Values("If-Range")), 1, "If-Range values of request %d: %q", i+1, h.Values("If-Range"))
			}
			require.NoError(t, err)
			require.True(t, bytes.Equal(file[100:], got), "the bytes read are the range asked for")
		})

		for _, tc := range []struct {
			name, key, value string
			header           string // the header's canonical name
			opt              Option
			check            func(t *testing.T, attempt int, v string)
		}{
			{"grpc-timeout", "grpc-timeout", "1H", "Grpc-Timeout", WithDeadlineHeader(deadline.GRPCTimeout), func(t *testing.T, _ int, v string) {
				d, kind := deadlinefmt.Parse(string(deadline.GRPCTimeout), v)
				require.Equal(t, deadlinefmt.Set, kind, "a grpc-timeout: %q", v)
				assert.Positive(t, d)
				assert.LessOrEqual(t, d, 5*time.Second, "the Transport's time left, %q", v)
			}},
			{"x-envoy-expected-rq-timeout-ms", "x-envoy-expected-rq-timeout-ms", "3600000", "X-Envoy-Expected-Rq-Timeout-Ms", WithDeadlineHeader(deadline.EnvoyTimeout), func(t *testing.T, _ int, v string) {
				d, kind := deadlinefmt.Parse(string(deadline.EnvoyTimeout), v)
				require.Equal(t, deadlinefmt.Set, kind, "a time in milliseconds: %q", v)
				assert.LessOrEqual(t, d, 5*time.Second, "the Transport's time left, %q", v)
			}},
			{"attempt header", "x-attempt", "bogus", "X-Attempt", WithAttemptHeader("X-Attempt"), func(t *testing.T, attempt int, v string) {
				assert.True(t, strings.HasPrefix(v, strconv.Itoa(attempt)+"/"), "attempt %d sent %q", attempt, v)
			}},
		} {
			t.Run(p.name+" "+tc.name, func(t *testing.T) {
				var rec hostileRecorder
				var served atomic.Int32
				h := rec.wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
					if served.Add(1) == 1 {
						w.WriteHeader(http.StatusServiceUnavailable)
						return
					}
					io.WriteString(w, "ok")
				}))
				srv, tr := hostileServe(t, p, h, retryhttptest.Pass(), tc.opt)
				ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
				defer cancel()
				resp := hostileGet(t, ctx, p, tr, srv.URL, func(h http.Header) { h[tc.key] = []string{tc.value} })
				require.Equal(t, http.StatusOK, resp.StatusCode)

				headers := rec.headers()
				require.Len(t, headers, 2, "the 503, and its retry")
				for i, h := range headers {
					values := h.Values(tc.header)
					if assert.Len(t, values, 1, "%s values of attempt %d: %q", tc.header, i+1, values) {
						tc.check(t, i+1, values[0])
					}
				}
			})
		}

		t.Run(p.name+" accept-encoding", func(t *testing.T) {
			file := hostileContent(100_000, 6)
			var rec hostileRecorder
			srv, tr := hostileServe(t, p, rec.wrap(hostileFile(file, `"v1"`, time.Time{})), retryhttptest.Sequence(retryhttptest.CloseAfter(30_000)))
			resp := hostileGet(t, t.Context(), p, tr, srv.URL, func(h http.Header) { h["accept-encoding"] = []string{"identity"} })
			require.Equal(t, http.StatusOK, resp.StatusCode)

			got, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.True(t, bytes.Equal(file, got), "the bytes read are the body")
			headers := rec.headers()
			require.Len(t, headers, 2, "the request, and one for the rest")
			assert.Equal(t, "bytes=30000-", headers[1].Get("Range"))
			assert.Equal(t, []string{"identity"}, headers[1].Values("Accept-Encoding"), "Accept-Encoding of the request for the rest")
		})
	}
}

// TestHostileDeadlineOfElevenDigits sends a deadline 200 days away, whose
// milliseconds (17,280,000,000) take 11 digits, in the millisecond
// formats, alone and together, and checks that each value sent has at most
// the 10 digits the formats allow, and that the library's own handler reads
// it as a deadline, capped, and never reports it malformed.
func TestHostileDeadlineOfElevenDigits(t *testing.T) {
	formats := []deadline.Format{deadline.EnvoyTimeout, deadline.ConnectTimeout, deadline.Milliseconds("X-Timeout-Ms")}
	for _, sent := range [][]deadline.Format{formats[:1], formats[1:2], formats[2:], formats} {
		var names []string
		for _, f := range sent {
			names = append(names, string(f))
		}
		t.Run(strings.Join(names, " "), func(t *testing.T) {
			var mu sync.Mutex
			var malformed []string
			var header http.Header
			var left time.Duration
			var hasDeadline bool
			next := http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
				deadline, ok := r.Context().Deadline()
				mu.Lock()
				defer mu.Unlock()
				header, hasDeadline, left = r.Header.Clone(), ok, time.Until(deadline)
			})
			h := server.Handler(next, server.Deadline(formats...), server.OnMalformedDeadline(func(_ *http.Request, f deadline.Format, v string) {
				mu.Lock()
				defer mu.Unlock()
				malformed = append(malformed, string(f)+": "+v)
			}))
			srv, tr := hostileServe(t, hostileHTTP1, h, retryhttptest.Pass(), WithDeadlineHeader(sent...))
			ctx, cancel := context.WithDeadline(t.Context(), time.Now().Add(200*24*time.Hour))
			defer cancel()
			resp := hostileGet(t, ctx, hostileHTTP1, tr, srv.URL, nil)
			require.Equal(t, http.StatusOK, resp.StatusCode)

			mu.Lock()
			defer mu.Unlock()
			for _, f := range sent {
				values := header.Values(string(f))
				require.Len(t, values, 1, "values of %s", f)
				_, ok := wire.Digits(values[0])
				assert.True(t, ok, "%s: %q is a number", f, values[0])
				assert.LessOrEqual(t, len(values[0]), 10, "%s: %q has at most 10 digits", f, values[0])
			}
			assert.Empty(t, malformed, "values reported malformed")
			require.True(t, hasDeadline, "the handler's request has a deadline")
			assert.Positive(t, left)
			assert.LessOrEqual(t, left, time.Minute, "the deadline is capped at server.MaxDeadline's default")
		})
	}
}

// TestHostileRepeatedETag answers with two ETag fields: a request for the
// rest answered by a 206 of a new version whose first ETag is the stale
// one, which must end the read with resume.Changed before any byte of the
// new version; and a first response, which must not be resumed at all.
func TestHostileRepeatedETag(t *testing.T) {
	v1 := hostileContent(100_000, 7)
	v2 := hostileContent(100_000, 8)
	for _, p := range hostileProtos {
		t.Run(p.name+" a 206 of the new version, the stale ETag first", func(t *testing.T) {
			var served atomic.Int32
			var rec hostileRecorder
			h := rec.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if served.Add(1) == 1 {
					hostileFile(v1, `"v1"`, time.Time{}).ServeHTTP(w, r)
					return
				}
				// ServeContent matches If-Range against the first.
				w.Header()["Etag"] = []string{`"v1"`, `"v2"`}
				http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(v2))
			}))
			srv, tr := hostileServe(t, p, h, retryhttptest.Sequence(retryhttptest.CloseAfter(30_000)))
			resp := hostileGet(t, t.Context(), p, tr, srv.URL, nil)
			require.Equal(t, http.StatusOK, resp.StatusCode)

			got, err := io.ReadAll(resp.Body)
			var rerr *resume.Error
			require.ErrorAs(t, err, &rerr)
			assert.Equal(t, resume.Changed, rerr.Reason)
			require.True(t, bytes.Equal(v1[:len(got)], got), "a byte of the new version reached the caller, at most %d bytes read", len(got))
			headers := rec.headers()
			require.Len(t, headers, 2, "the request, and one for the rest")
			assert.Equal(t, "bytes=30000-", headers[1].Get("Range"))
		})

		t.Run(p.name+" a first response", func(t *testing.T) {
			var rec hostileRecorder
			h := rec.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header()["Etag"] = []string{`"v1"`, `"v2"`}
				http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(v1))
			}))
			srv, tr := hostileServe(t, p, h, retryhttptest.Sequence(retryhttptest.CloseAfter(30_000)))
			resp := hostileGet(t, t.Context(), p, tr, srv.URL, nil)
			require.Equal(t, http.StatusOK, resp.StatusCode)

			got, err := io.ReadAll(resp.Body)
			var rerr *resume.Error
			require.ErrorAs(t, err, &rerr)
			assert.Equal(t, resume.BadValidator, rerr.Reason)
			require.True(t, bytes.Equal(v1[:len(got)], got), "a byte read is not the body's")
			for i, h := range rec.headers() {
				assert.Empty(t, h.Get("Range"), "Range of request %d", i+1)
			}
		})
	}
}

// TestHostileEmptyETag serves a body whose ETag is "" (an empty entity
// tag, which names nothing) and checks that, cut, it is not resumed by it:
// not at all without a strong Last-Modified (resume.NoValidator), and by
// Last-Modified when there is one.
func TestHostileEmptyETag(t *testing.T) {
	body := hostileContent(100_000, 9)
	modified := time.Unix(1_700_000_000, 0)
	for _, p := range hostileProtos {
		t.Run(p.name+" no Last-Modified", func(t *testing.T) {
			var rec hostileRecorder
			srv, tr := hostileServe(t, p, rec.wrap(hostileFile(body, `""`, time.Time{})), retryhttptest.Sequence(retryhttptest.CloseAfter(30_000)))
			resp := hostileGet(t, t.Context(), p, tr, srv.URL, nil)
			require.Equal(t, http.StatusOK, resp.StatusCode)

			got, err := io.ReadAll(resp.Body)
			var rerr *resume.Error
			require.ErrorAs(t, err, &rerr)
			assert.Equal(t, resume.NoValidator, rerr.Reason)
			require.True(t, bytes.Equal(body[:len(got)], got), "a byte read is not the body's")
			assert.Len(t, rec.headers(), 1, "no request for the rest")
		})

		t.Run(p.name+" a strong Last-Modified", func(t *testing.T) {
			var rec hostileRecorder
			srv, tr := hostileServe(t, p, rec.wrap(hostileFile(body, `""`, modified)), retryhttptest.Sequence(retryhttptest.CloseAfter(30_000)))
			resp := hostileGet(t, t.Context(), p, tr, srv.URL, nil)
			require.Equal(t, http.StatusOK, resp.StatusCode)

			got, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.True(t, bytes.Equal(body, got), "the bytes read are the body")
			headers := rec.headers()
			require.Len(t, headers, 2, "the request, and one for the rest")
			assert.Equal(t, modified.UTC().Format(http.TimeFormat), headers[1].Get("If-Range"), "resumed by Last-Modified")
		})
	}
}

// TestHostileTrailersOfAResumedBody serves, over HTTP/2, a body with a
// trailer, cut once, and checks that the trailer of the response that
// completed the body reaches the caller's response once it is read.
func TestHostileTrailersOfAResumedBody(t *testing.T) {
	body := hostileContent(100_000, 10)
	sum := hostileDigest(body)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Trailer", "X-Checksum")
		hostileFile(body, `"v1"`, time.Time{}).ServeHTTP(w, r)
		w.Header().Set("X-Checksum", sum)
	})
	srv, tr := hostileServe(t, hostileHTTP2, h, retryhttptest.Sequence(retryhttptest.CloseAfter(30_000)))
	resp := hostileGet(t, t.Context(), hostileHTTP2, tr, srv.URL, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)

	got, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.True(t, bytes.Equal(body, got), "the bytes read are the body")
	assert.Equal(t, 2, srv.Attempts(), "the request, and one for the rest")
	assert.Equal(t, sum, resp.Trailer.Get("X-Checksum"))
}

// hostileResumable returns a resumable 200 to r whose body gives the first
// cut bytes of body and then fails with io.ErrUnexpectedEOF.
func hostileResumable(r *http.Request, body []byte, cut int) *http.Response {
	h := http.Header{"Accept-Ranges": {"bytes"}, "Etag": {`"v1"`}}
	b := io.MultiReader(bytes.NewReader(body[:cut]), iotest.ErrReader(io.ErrUnexpectedEOF))
	return &http.Response{StatusCode: http.StatusOK, Header: h, ContentLength: int64(len(body)), Body: io.NopCloser(b), Request: r}
}

// TestHostileCloseRefundsTheResumeInFlight closes a body while its request
// for the rest waits on the server, and checks that the budget gets back
// what that resume paid.
func TestHostileCloseRefundsTheResumeInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		body := hostileContent(2000, 11)
		var sent atomic.Int32
		base := rtFunc(func(r *http.Request) (*http.Response, error) {
			if sent.Add(1) == 1 {
				return hostileResumable(r, body, 1000), nil
			}
			<-r.Context().Done()
			return nil, r.Context().Err()
		})
		bucket := budget.NewBucket(budget.Capacity(20))
		tr := New(WithBase(base), WithBudget(bucket), WithBackoff(backoff.Constant(0)), WithResume(resume.StallTimeout(0)))
		resp, err := tr.RoundTrip(get(t, "http://files.test/"))
		require.NoError(t, err)
		before := bucket.Balance()

		done := make(chan error, 1)
		go func() {
			_, err := io.ReadAll(resp.Body)
			done <- err
		}()
		synctest.Wait()
		require.Equal(t, int32(2), sent.Load(), "the request for the rest is in flight")
		require.Less(t, bucket.Balance(), before, "the resume paid")
		require.NoError(t, resp.Body.Close())
		require.Error(t, <-done)
		assert.Equal(t, before, bucket.Balance(), "what the resume paid came back")
	})
}

// TestHostileResumeOutOfTimeIsADeadline makes the clock jump during a
// resume's backoff, as a late timer does, so that less than 1 ms is left
// before the deadline when the request for the rest is due, and checks
// that the give-up is reported as the retry path reports it:
// GiveUpDeadline, not GiveUpCanceled.
func TestHostileResumeOutOfTimeIsADeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		body := hostileContent(2000, 12)
		var sent atomic.Int32
		base := rtFunc(func(r *http.Request) (*http.Response, error) {
			sent.Add(1)
			return hostileResumable(r, body, 1000), nil
		})
		var skew time.Duration
		var events []GiveUpEvent
		tr := newTestTransport(base, 0.5, WithDeadlineHeader(deadline.GRPCTimeout), WithBackoff(backoff.Constant(10*time.Millisecond)),
			WithOnRetry(func(e RetryEvent) {
				if e.Resume {
					skew = 89500 * time.Microsecond
				}
			}),
			WithOnGiveUp(func(e GiveUpEvent) { events = append(events, e) }))
		tr.now = func() time.Time { return time.Now().Add(skew) }
		req := withDeadline(t, "http://files.test/", 100*time.Millisecond)
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		defer resp.Body.Close()

		got, err := io.ReadAll(resp.Body)
		assert.Len(t, got, 1000)
		var rerr *resume.Error
		require.ErrorAs(t, err, &rerr)
		assert.Equal(t, resume.GaveUp, rerr.Reason)
		assert.Equal(t, GiveUpDeadline, rerr.GiveUp)
		assert.ErrorIs(t, err, ErrNoTimeLeft)
		assert.Equal(t, int32(1), sent.Load(), "no request for the rest")
		require.Len(t, events, 1)
		assert.Equal(t, GiveUpDeadline, events[0].Reason)
		assert.True(t, events[0].Resume)
	})
}
