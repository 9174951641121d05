package retryhttp

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"

	"github.com/retryhttp/retryhttp/internal/wire"
	"github.com/stretchr/testify/assert"

	"github.com/retryhttp/retryhttp/internal/guard"
)

func TestMayResend(t *testing.T) {
	key := http.Header{"Idempotency-Key": {"k"}}
	xkey := http.Header{"X-Idempotency-Key": {"k"}}
	nilKey := http.Header{"Idempotency-Key": nil} // net/http counts presence
	reset := &net.OpError{Op: "read", Err: syscall.ECONNRESET}
	tests := []struct {
		method string
		header http.Header
		err    error
		want   bool
	}{
		{"", nil, nil, true},
		{"GET", nil, nil, true},
		{"HEAD", nil, nil, true},
		{"OPTIONS", nil, nil, true},
		{"TRACE", nil, nil, true},
		{"PUT", nil, nil, true},
		{"DELETE", nil, nil, true},
		{"POST", nil, nil, false},
		{"PATCH", nil, nil, false},
		{"CONNECT", nil, nil, false},
		{"PROPFIND", nil, nil, false},
		{"get", nil, nil, false}, // methods are case-sensitive
		{"POST", key, nil, true},
		{"PATCH", xkey, nil, true},
		{"POST", nilKey, nil, true},
		{"POST", nil, dialRefused, true},
		{"POST", nil, syscall.ECONNREFUSED, true},
		{"POST", nil, &net.OpError{Op: "dial", Err: &net.DNSError{IsTemporary: true}}, true},
		{"POST", nil, reset, false},
		{"POST", nil, errors.New("EOF"), false},
		{"POST", nil, errors.New("stream error: stream ID 1; REFUSED_STREAM"), false},
		{"POST", nil, fmt.Errorf(`net/http: malformed HTTP status code "REFUSED_STREAM"`), false},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, mayResend(tt.method, tt.header, tt.err, nil), "%q %v %v", tt.method, tt.header, tt.err)
	}
}

func TestMayResendWithGuard(t *testing.T) {
	refused := h2StreamError(t, wire.H2RefusedStream)
	tests := []struct {
		name  string
		asked bool
		conns int32
		err   error
		want  bool
	}{
		{"no connection obtained", true, 0, errors.New("any error"), true},
		{"base does not report through httptrace", false, 0, errors.New("any error"), false},
		{"connection obtained", true, 1, errors.New("any error"), false},
		{"connection obtained, then a dial error", true, 1, dialRefused, false},
		{"refused stream on the one send", true, 1, refused, true},
		{"a resend stopped", true, 2, refused, false},
		{"a resend stopped, dial error", true, 2, dialRefused, false},
		{"a resend let through, then a refused stream", true, 2, refused, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := guard.Fake(tt.asked, tt.conns, strings.HasPrefix(tt.name, "a resend stopped"))
			assert.Equal(t, tt.want, mayResend(http.MethodPost, http.Header{}, tt.err, g))
		})
	}
}

func TestNewIdempotencyKey(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		k := wire.NewIdempotencyKey()
		assert.Regexp(t, `^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`, k)
		assert.False(t, seen[k], "duplicate key %s", k)
		seen[k] = true
	}
}
