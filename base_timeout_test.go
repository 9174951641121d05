package retryhttp

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/retryhttp/retryhttp/budget"
	"github.com/retryhttp/retryhttp/internal/conns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hangingBase blocks every attempt until its context ends, as a server that
// never answers does.
func hangingBase(attempts *atomic.Int32) http.RoundTripper {
	return rtFunc(func(r *http.Request) (*http.Response, error) {
		attempts.Add(1)
		<-r.Context().Done()
		return nil, r.Context().Err()
	})
}

func TestAttemptTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var attempts atomic.Int32
		var bucket = budget.NewBucket()
		tr := newTestTransport(hangingBase(&attempts), 0, WithAttemptTimeout(time.Second), WithBudget(bucket))
		start := time.Now()
		_, err := tr.RoundTrip(get(t, "http://svc.test/"))
		require.ErrorIs(t, err, ErrAttemptTimeout)
		var timeout interface{ Timeout() bool }
		require.ErrorAs(t, err, &timeout)
		assert.True(t, timeout.Timeout())
		assert.EqualValues(t, 3, attempts.Load())
		assert.Equal(t, 3*time.Second, time.Since(start))
		assert.Equal(t, 480*budget.Token, bucket.Balance(), "two retries after timeouts cost 10 each")
	})
}

func TestAttemptTimeoutThroughClient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var attempts atomic.Int32
		client := &http.Client{Transport: newTestTransport(hangingBase(&attempts), 0, WithAttemptTimeout(time.Second))}
		_, err := client.Get("http://svc.test/")
		var uerr interface{ Timeout() bool }
		require.ErrorAs(t, err, &uerr)
		assert.True(t, uerr.Timeout(), "url.Error.Timeout sees through *Error")
	})
}

// slowBody streams size bytes in chunks, one chunk per tick, honouring ctx
// as net/http's response bodies do.
func slowBody(ctx context.Context, size, chunk int, tick time.Duration) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() {
		for sent := 0; sent < size; sent += chunk {
			select {
			case <-ctx.Done():
				pw.CloseWithError(ctx.Err())
				return
			case <-time.After(tick):
			}
			if _, err := pw.Write(bytes.Repeat([]byte("x"), chunk)); err != nil {
				return
			}
		}
		pw.Close()
	}()
	return pr
}

func TestAttemptTimeoutDoesNotCutFinalBody(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const size = 64 << 10
		var ctxDone atomic.Bool
		base := rtFunc(func(r *http.Request) (*http.Response, error) {
			ctx := r.Context()
			context.AfterFunc(ctx, func() { ctxDone.Store(true) })
			// 64 KiB over 16 s, in 1 KiB chunks, after a 1 s attempt timeout.
			return &http.Response{StatusCode: 200, Header: http.Header{}, Body: slowBody(ctx, size, 1<<10, 250*time.Millisecond)}, nil
		})
		tr := newTestTransport(base, 0, WithAttemptTimeout(time.Second))
		resp, err := tr.RoundTrip(get(t, "http://svc.test/"))
		require.NoError(t, err)
		start := time.Now()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		assert.Len(t, body, size)
		assert.Equal(t, 16*time.Second, time.Since(start))
		assert.False(t, ctxDone.Load(), "attempt context alive until Close")
		require.NoError(t, resp.Body.Close())
		synctest.Wait()
		assert.True(t, ctxDone.Load(), "Close releases the attempt context")
	})
}

func TestUpgradeBodyStaysWritable(t *testing.T) {
	type rwc struct {
		io.Reader
		io.Writer
		io.Closer
	}
	base := rtFunc(func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: http.StatusSwitchingProtocols, Header: http.Header{}, Body: rwc{strings.NewReader(""), io.Discard, io.NopCloser(nil)}}, nil
	})
	resp, err := New(WithBase(base), WithAttemptTimeout(time.Second)).RoundTrip(get(t, "http://svc.test/"))
	require.NoError(t, err)
	_, ok := resp.Body.(io.ReadWriteCloser)
	assert.True(t, ok, "101 body must stay an io.ReadWriteCloser")
	resp.Body.Close()
}

func TestAttemptTimeoutErrorSaysItOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// net/http reports the context's cause, as this base does.
		base := rtFunc(func(r *http.Request) (*http.Response, error) {
			<-r.Context().Done()
			return nil, context.Cause(r.Context())
		})
		tr := newTestTransport(base, 0, WithAttemptTimeout(time.Second), WithMaxAttempts(1))
		_, err := tr.RoundTrip(get(t, "http://svc.test/"))
		require.ErrorIs(t, err, ErrAttemptTimeout)
		assert.Equal(t, 1, strings.Count(err.Error(), ErrAttemptTimeout.Error()), "%q", err)
	})
	other := &conns.TimeoutError{Err: context.DeadlineExceeded}
	assert.Equal(t, "retryhttp: attempt timed out: context deadline exceeded", other.Error())
}
