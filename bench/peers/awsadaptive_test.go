package peers

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAWSAdaptive checks that the adaptive mode makes one attempt for a
// success, and three for a host that answers every attempt with 429.
func TestAWSAdaptive(t *testing.T) {
	tests := []struct {
		status int
		calls  int64
	}{
		{http.StatusOK, 1},
		{http.StatusTooManyRequests, 3},
	}
	for _, tt := range tests {
		t.Run(http.StatusText(tt.status), func(t *testing.T) {
			var calls atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				calls.Add(1)
				w.WriteHeader(tt.status)
			}))
			defer srv.Close()
			c := &http.Client{Transport: NewAWSAdaptive(NewBase(), fast)}
			defer c.CloseIdleConnections()
			resp, err := c.Get(srv.URL)
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, tt.status, resp.StatusCode)
			assert.Equal(t, tt.calls, calls.Load())
		})
	}
}

// TestThrottle429 checks that a 429 is a throttle to the SDK, and that
// the check has no opinion on other statuses and errors.
func TestThrottle429(t *testing.T) {
	status := func(code int) error {
		return &smithyhttp.ResponseError{
			Response: &smithyhttp.Response{Response: &http.Response{StatusCode: code}},
			Err:      errStatus,
		}
	}
	tests := []struct {
		name string
		err  error
		want aws.Ternary
	}{
		{"429", status(http.StatusTooManyRequests), aws.TrueTernary},
		{"503", status(http.StatusServiceUnavailable), aws.UnknownTernary},
		{"send error", &smithyhttp.RequestSendError{Err: errors.New("reset")}, aws.UnknownTernary},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Throttle429.IsErrorThrottle(tt.err))
		})
	}
}
