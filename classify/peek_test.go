package classify

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"
	"testing/synctest"
	"time"

	"github.com/retryhttp/retryhttp/internal/testkit"
	"github.com/retryhttp/retryhttp/internal/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPeekBody(t *testing.T) {
	long := strings.Repeat("x", wire.PeekLimit) + "the rest"
	boom := errors.New("connection reset")
	tests := []struct {
		name     string
		body     io.Reader
		length   int64
		want     string // the prefix
		complete bool
		all      string // what the reader gets
		readErr  error  // what the reader gets after all
	}{
		{"short, length known", strings.NewReader(`{"code":"x"}`), 12, `{"code":"x"}`, true, `{"code":"x"}`, nil},
		{"short, length unknown", strings.NewReader(`<Error/>`), -1, `<Error/>`, true, `<Error/>`, nil},
		{"one byte at a time", iotest.OneByteReader(strings.NewReader("abcdef")), -1, "abcdef", true, "abcdef", nil},
		{"exactly the limit, length known", strings.NewReader(long[:wire.PeekLimit]), wire.PeekLimit, long[:wire.PeekLimit], true, long[:wire.PeekLimit], nil},
		// Without a byte past the limit, nothing tells the end from more.
		{"exactly the limit, length unknown", strings.NewReader(long[:wire.PeekLimit]), -1, long[:wire.PeekLimit], false, long[:wire.PeekLimit], nil},
		{"longer than the limit", strings.NewReader(long), int64(len(long)), long[:wire.PeekLimit], false, long, nil},
		{"longer than the limit, length unknown", strings.NewReader(long), -1, long[:wire.PeekLimit], false, long, nil},
		{"fails midway", io.MultiReader(strings.NewReader("abc"), iotest.ErrReader(boom)), -1, "abc", false, "abc", boom},
		{"fails at once", iotest.ErrReader(boom), -1, "", false, "", boom},
		{"cut short of its length", strings.NewReader("abc"), 10, "abc", true, "abc", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := &testkit.CountingBody{Reader: tt.body}
			resp := &http.Response{StatusCode: 400, Body: src, ContentLength: tt.length}
			prefix, complete := Peek(resp)
			assert.Equal(t, tt.want, string(prefix))
			assert.Equal(t, tt.complete, complete)

			again, complete2 := Peek(resp)
			assert.Equal(t, tt.want, string(again), "a second peek")
			assert.Equal(t, tt.complete, complete2)

			got, err := io.ReadAll(resp.Body)
			assert.Equal(t, tt.all, string(got), "the reader gets every byte")
			assert.Equal(t, tt.readErr, err)
			require.NoError(t, resp.Body.Close())
			require.NoError(t, resp.Body.Close())
			assert.EqualValues(t, 1, src.Closes.Load(), "the original body closes")
		})
	}
}

func TestPeekBodyReadsNothingWithoutBody(t *testing.T) {
	for _, resp := range []*http.Response{
		nil,
		{StatusCode: 400},
		{StatusCode: 400, Body: http.NoBody},
	} {
		prefix, complete := Peek(resp)
		assert.Nil(t, prefix)
		assert.True(t, complete)
	}
}

// TestPeekBodyStalled checks the bound in time: a body that stalls gives
// the bytes that arrived within 100 ms, in all, however often it is peeked,
// and its reader still gets every byte, in order, once the rest arrives.
func TestPeekBodyStalled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		body := testkit.NewPausingBody(`{"__type":"Throttl`, `ingException"}`)
		resp := &http.Response{StatusCode: 400, Body: body, ContentLength: -1}
		start := time.Now()
		prefix, complete := Peek(resp)
		assert.Equal(t, 100*time.Millisecond, time.Since(start))
		assert.Equal(t, `{"__type":"Throttl`, string(prefix))
		assert.False(t, complete)

		prefix, complete = Peek(resp)
		assert.Equal(t, 100*time.Millisecond, time.Since(start), "a second peek does not wait again")
		assert.Equal(t, `{"__type":"Throttl`, string(prefix))
		assert.False(t, complete)

		close(body.Release)
		got, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		assert.Equal(t, `{"__type":"ThrottlingException"}`, string(got))
		resp.Body.Close()
	})
}

// TestPeekBodyStalledThenClosed checks that closing a stalled body ends the
// read ahead: no goroutine outlives the body (synctest fails the test if
// one is left blocked).
func TestPeekBodyStalledThenClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		body := testkit.NewPausingBody("<Error><Co", "de>SlowDown</Code></Error>")
		resp := &http.Response{StatusCode: 503, Body: body, ContentLength: -1}
		Peek(resp)
		require.NoError(t, resp.Body.Close())
		synctest.Wait()
		got, err := io.ReadAll(resp.Body)
		assert.Equal(t, "<Error><Co", string(got), "the bytes read before the close")
		assert.Error(t, err, "then the closed body's error")
		assert.EqualValues(t, 1, body.Closes.Load())
	})
}

// FuzzPeekBody checks that a peek never changes the bytes the reader gets,
// however the body is cut into reads, and that the prefix is complete when
// it is the whole body. It peeks in a synctest bubble, where the 100 ms
// wait ends only once the read ahead is blocked: on a busy machine, real
// time could end it first, and the prefix would rightly be incomplete.
func FuzzPeekBody(f *testing.F) {
	f.Add([]byte(`{"__type":"com.amazonaws.dynamodb.v20120810#ThrottlingException","message":"slow down"}`), uint16(7), true)
	f.Add(bytes.Repeat([]byte("<Error>"), 2000), uint16(1000), false)
	f.Add([]byte{}, uint16(1), true)
	f.Fuzz(func(t *testing.T, data []byte, chunk uint16, known bool) {
		synctest.Test(t, func(t *testing.T) {
			length := int64(-1)
			if known {
				length = int64(len(data))
			}
			body := &chunkReader{data: data, chunk: max(int(chunk), 1)}
			resp := &http.Response{StatusCode: 400, Body: io.NopCloser(body), ContentLength: length}
			prefix, complete := Peek(resp)
			if len(prefix) > wire.PeekLimit || !bytes.HasPrefix(data, prefix) {
				t.Fatalf("prefix of %d bytes is not a prefix of the body", len(prefix))
			}
			whole := len(prefix) == len(data)
			if len(data) == wire.PeekLimit && !known {
				whole = false // no byte past the limit tells the end from more
			}
			if complete != whole && len(data) > 0 {
				t.Fatalf("complete = %t with %d of %d bytes (length known: %t)", complete, len(prefix), len(data), known)
			}
			got, err := io.ReadAll(resp.Body)
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("reader got %d bytes (%v), want %d", len(got), err, len(data))
			}
		})
	})
}

// chunkReader reads data at most chunk bytes at a time.
type chunkReader struct {
	data  []byte
	chunk int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.data[:min(len(r.data), r.chunk)])
	r.data = r.data[n:]
	return n, nil
}
