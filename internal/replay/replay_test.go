package replay

import (
	"bytes"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/retryhttp/retryhttp/internal/testkit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// FuzzTee reads a body through a tee in chunks of the sizes given, as a
// base transport would, and checks what a retry would send: the caller's
// own body when none of it was read; the copy when it was read whole
// within the limit; the copy finished from the caller's body when part was
// read and the whole (up to its declared length) fits the limit, the
// attempt's view then ended; and nothing otherwise. The caller's body is
// closed exactly once. It runs in a synctest bubble, so that the bound on
// finishing a copy is not a busy machine's clock.
func FuzzTee(f *testing.F) {
	f.Add([]byte("0123456789"), int64(1<<10), int64(10), []byte{3, 3, 3, 3})
	f.Add([]byte("0123456789"), int64(4), int64(-1), []byte{20})
	f.Add([]byte(""), int64(0), int64(0), []byte{1})
	f.Add([]byte("abc"), int64(math.MaxInt64), int64(math.MaxInt64), []byte{0})
	f.Add([]byte("abcdef"), int64(10), int64(3), []byte{3})
	f.Add([]byte("abcdef"), int64(10), int64(0), []byte{2})
	f.Add([]byte("abcdef"), int64(4), int64(0), []byte{2})
	f.Add([]byte("abcdef"), int64(10), int64(4), []byte{2})
	f.Add([]byte("x"), int64(45), int64(0), []byte{1})
	f.Fuzz(func(t *testing.T, body []byte, limit, want int64, chunks []byte) {
		synctest.Test(t, func(t *testing.T) { checkTee(t, body, limit, want, chunks) })
	})
}

// checkTee is one run of FuzzTee: see there.
func checkTee(t *testing.T, body []byte, limit, want int64, chunks []byte) {
	if limit < 0 {
		limit = -limit - 1
	}
	src := &testkit.CountingBody{Reader: bytes.NewReader(body)}
	tee := newTee(src, limit, want)
	v := tee.view()
	var read []byte
	eof := false
	for _, c := range chunks {
		p := make([]byte, c)
		n, err := v.Read(p)
		read = append(read, p[:n]...)
		if err == io.EOF {
			eof = true
			break
		}
	}
	v.Close()
	// What a finished copy holds: the body up to its declared length, or
	// to its end once more than that was read.
	size := int64(len(body))
	if want > 0 && want < size && int64(len(read)) <= want {
		size = want
	}
	nb, buf, ok := tee.next()
	switch n := int64(len(read)); {
	case n == 0 && !eof:
		require.True(t, ok, "nothing read: the caller's body is sent again")
		require.Nil(t, buf)
	case (eof || (want > 0 && n == want)) && n <= limit:
		require.True(t, ok, "read whole within the limit")
		require.Equal(t, string(read), string(buf))
		got, _ := io.ReadAll(nb)
		require.Equal(t, string(read), string(got))
	case !eof && n <= size && size <= limit:
		require.True(t, ok, "read %d of %d bytes within the limit %d: the copy is finished", n, size, limit)
		require.Equal(t, string(body[:size]), string(buf))
		_, err := v.Read(make([]byte, 1))
		require.ErrorIs(t, err, ErrBodyEnded, "the attempt's view ends once the copy is finished")
	default:
		require.False(t, ok, "read %d of %d bytes (eof %v, limit %d): not replayable", n, len(body), eof, limit)
	}
	if nb != nil {
		nb.Close()
	}
	tee.release()
	require.EqualValues(t, 1, src.Closes.Load(), "the caller's body is closed once")
}

// TestFreshBodies checks that the GetBody functions of http.NewRequest,
// whose bodies share no stream, are told apart from any other.
func TestFreshBodies(t *testing.T) {
	for _, body := range []io.Reader{bytes.NewBufferString("x"), bytes.NewReader([]byte("x")), strings.NewReader("x")} {
		req, err := http.NewRequest(http.MethodPut, "http://svc.test/", body)
		require.NoError(t, err)
		assert.True(t, FreshBodies(req.GetBody), "%T", body)
	}
	assert.False(t, FreshBodies(func() (io.ReadCloser, error) { return http.NoBody, nil }))
}
