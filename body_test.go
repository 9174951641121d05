package retryhttp

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadUpTo(t *testing.T) {
	tests := []struct {
		name     string
		body     string
		limit    int64
		hint     int64
		wantLen  int
		overflow bool
	}{
		{"empty", "", 10, 0, 0, false},
		{"short, unknown length", "abc", 10, 0, 3, false},
		{"short, known length", "abc", 10, 3, 3, false},
		{"exactly the limit", "0123456789", 10, 0, 10, false},
		{"one over the limit", "0123456789a", 10, 0, 11, true},
		{"far over the limit", strings.Repeat("x", 5000), 10, 5000, 11, true},
		{"longer than declared", "abcdef", 10, 3, 6, false},
		{"zero limit, empty", "", 0, 0, 0, false},
		{"zero limit, one byte", "a", 0, 0, 1, true},
		{"large, unknown length", strings.Repeat("y", 3000), 4096, 0, 3000, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// OneByteReader makes every read short, as a network body's are.
			got, err := readUpTo(iotest.OneByteReader(strings.NewReader(tt.body)), tt.limit, tt.hint)
			require.NoError(t, err)
			assert.Len(t, got, tt.wantLen)
			assert.Equal(t, tt.overflow, int64(len(got)) > tt.limit)
			assert.Equal(t, tt.body[:tt.wantLen], string(got))
		})
	}
	_, err := readUpTo(iotest.ErrReader(io.ErrClosedPipe), 10, 0)
	assert.ErrorIs(t, err, io.ErrClosedPipe)
}

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
	assert.Equal(t, http.NoBody, got.Body)
	assert.Zero(t, got.ContentLength)
}
