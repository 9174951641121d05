package retryhttp

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/retryhttp/retryhttp/backoff"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEmptyBodyWithoutGetBody(t *testing.T) {
	base := &script{steps: statuses(200)}
	var got *http.Request
	tr := New(WithBase(rtFunc(func(r *http.Request) (*http.Response, error) {
		got = r
		return base.RoundTrip(r)
	})))
	req, err := http.NewRequest(http.MethodPut, "http://svc.test/", &plainReader{strings.NewReader("")})
	require.NoError(t, err)
	resp, err := tr.RoundTrip(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.NotNil(t, got.Body, "the first attempt carries the caller's body, as a plain transport's would")
	assert.Zero(t, got.ContentLength)
}

func TestFullDuplexBodyIsNotReadAhead(t *testing.T) {
	// The caller writes more of its body only once the response has begun,
	// over HTTP/2 as gRPC-style streams do. Reading the body before the
	// first attempt would deadlock; the copy is made as the body is sent.
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		http.NewResponseController(w).Flush()
		sc := bufio.NewScanner(r.Body)
		for sc.Scan() {
			io.WriteString(w, "echo "+sc.Text()+"\n")
			http.NewResponseController(w).Flush()
		}
	}))
	srv.Config.Protocols = new(http.Protocols)
	srv.Config.Protocols.SetUnencryptedHTTP2(true)
	srv.Start()
	defer srv.Close()
	tr := New(WithBase(h2cTransport()))
	defer tr.CloseIdleConnections()

	// The deadline only bounds the test if the exchange deadlocked.
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	pr, pw := io.Pipe()
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, srv.URL, pr)
	require.NoError(t, err)
	type result struct {
		resp *http.Response
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := tr.RoundTrip(req)
		done <- result{resp, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-ctx.Done():
		// A transport that reads the body before sending it ignores the
		// deadline too: unblock it to end the test.
		pw.CloseWithError(ctx.Err())
		t.Fatal("RoundTrip did not return before the body ended")
	}
	resp, err := r.resp, r.err
	require.NoError(t, err, "the response begins before the body ends")
	defer resp.Body.Close()
	rd := bufio.NewReader(resp.Body)
	for _, line := range []string{"one", "two"} {
		_, err := io.WriteString(pw, line+"\n")
		require.NoError(t, err)
		got, err := rd.ReadString('\n')
		require.NoError(t, err)
		assert.Equal(t, "echo "+line+"\n", got)
	}
	require.NoError(t, pw.Close())
	rest, err := io.ReadAll(rd)
	require.NoError(t, err)
	assert.Empty(t, rest)
}

func TestBodyCopyResentOnlyWhenComplete(t *testing.T) {
	tests := []struct {
		name     string
		read     int // bytes the failing attempt reads before failing; -1 reads all
		limit    int64
		attempts int
	}{
		{"sent whole: resent from the copy", -1, 1 << 10, 2},
		{"never read: the caller's body is sent", 0, 1 << 10, 2},
		{"cut short: finished from the caller's body and resent", 3, 1 << 10, 2},
		{"cut short, longer than the limit: not resent", 3, 4, 1},
		{"longer than the limit: not resent", -1, 4, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var bodies []string
				base := rtFunc(func(r *http.Request) (*http.Response, error) {
					defer r.Body.Close()
					if len(bodies) == 0 && tt.read >= 0 {
						b := make([]byte, tt.read)
						io.ReadFull(r.Body, b)
						bodies = append(bodies, string(b))
						return nil, io.ErrUnexpectedEOF
					}
					b, _ := io.ReadAll(r.Body)
					bodies = append(bodies, string(b))
					if len(bodies) == 1 {
						return &http.Response{StatusCode: 503, Body: http.NoBody}, nil
					}
					return &http.Response{StatusCode: 200, Body: http.NoBody}, nil
				})
				src := &countingBody{Reader: &plainReader{strings.NewReader("0123456789")}}
				req, err := http.NewRequestWithContext(t.Context(), http.MethodPut, "http://svc.test/", src)
				require.NoError(t, err)
				resp, err := newTestTransport(base, 0, WithBodyBufferLimit(tt.limit)).RoundTrip(req)
				if resp != nil {
					resp.Body.Close()
				}
				require.Len(t, bodies, tt.attempts, "attempts: %q (%v)", bodies, err)
				if tt.attempts == 2 {
					require.NoError(t, err)
					assert.Equal(t, "0123456789", bodies[1], "the retry sends the whole body")
				}
				assert.EqualValues(t, 1, src.closes.Load(), "the caller's body is closed once")
			})
		})
	}
}

func TestHugeDeclaredLengthDoesNotPanic(t *testing.T) {
	for _, limit := range []int64{0, 1, defaultBodyBufferLimit, math.MaxInt64} {
		for _, length := range []int64{-1, 0, 3, math.MaxInt64 - 1, math.MaxInt64} {
			base := &script{steps: statuses(503, 200)}
			req, err := http.NewRequest(http.MethodPut, "http://svc.test/", &plainReader{strings.NewReader("abc")})
			require.NoError(t, err)
			req.ContentLength = length
			require.NotPanics(t, func() {
				resp, err := New(WithBase(base), WithBackoff(backoff.Constant(0)), WithBodyBufferLimit(limit)).RoundTrip(req)
				require.NoError(t, err)
				resp.Body.Close()
			}, "limit %d, length %d", limit, length)
		}
	}
}

// seekBody is a request body whose GetBody rewinds and returns the same
// stream, as the Azure SDK's does.
type seekBody struct{ *bytes.Reader }

func (seekBody) Close() error { return nil }

// TestGetBodySameStreamWaitsForClose checks that a retry does not ask
// GetBody for its body while the base still reads the last attempt's, as
// net/http may after RoundTrip returned: with a GetBody that rewinds one
// shared stream, the retry would send what the last attempt left of it.
func TestGetBodySameStreamWaitsForClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		payload := strings.Repeat("x", 1000)
		stream := seekBody{bytes.NewReader([]byte(payload))}
		var mu sync.Mutex
		var got []string
		var attempts int
		base := rtFunc(func(r *http.Request) (*http.Response, error) {
			mu.Lock()
			attempts++
			n := attempts
			mu.Unlock()
			if n == 1 {
				// Answer at once, and finish reading the body later.
				go func() {
					time.Sleep(10 * time.Millisecond)
					io.Copy(io.Discard, r.Body)
					r.Body.Close()
				}()
				return &http.Response{StatusCode: 503, Header: http.Header{}, Body: http.NoBody}, nil
			}
			b, _ := io.ReadAll(r.Body)
			r.Body.Close()
			mu.Lock()
			got = append(got, string(b))
			mu.Unlock()
			return &http.Response{StatusCode: 200, Header: http.Header{}, Body: http.NoBody}, nil
		})
		req, err := http.NewRequest(http.MethodPut, "http://blob.test/c/b", stream)
		require.NoError(t, err)
		req.ContentLength = int64(len(payload))
		req.GetBody = func() (io.ReadCloser, error) {
			_, err := stream.Seek(0, io.SeekStart)
			return stream, err
		}
		resp, err := newTestTransport(base, 0).RoundTrip(req)
		require.NoError(t, err)
		assert.Equal(t, 200, resp.StatusCode)
		require.Len(t, got, 1)
		assert.Equal(t, payload, got[0], "the retry sent the whole body")
	})
}

// TestNewRequestGetBodyIsNotWatched checks that a request carrying a
// GetBody of http.NewRequest's, whose bodies share no stream
// (replay.FreshBodies), is sent as the caller made it.
func TestNewRequestGetBodyIsNotWatched(t *testing.T) {
	req, err := http.NewRequest(http.MethodPut, "http://svc.test/", strings.NewReader("payload"))
	require.NoError(t, err)
	var got *http.Request
	base := rtFunc(func(r *http.Request) (*http.Response, error) {
		got = r
		r.Body.Close()
		return &http.Response{StatusCode: 200, Header: http.Header{}, Body: http.NoBody}, nil
	})
	_, err = newTestTransport(base, 0).RoundTrip(req)
	require.NoError(t, err)
	assert.Same(t, req, got, "the first attempt is the caller's request")
}
