package deadline

import (
	"context"
	"testing"

	"github.com/retryhttp/retryhttp/internal/deadlinefmt"
	"github.com/stretchr/testify/assert"
)

func TestMilliseconds(t *testing.T) {
	assert.Equal(t, Format("X-Deadline-Ms"), Milliseconds("x-deadline-ms"))
	assert.Equal(t, EnvoyTimeout, Milliseconds("x-envoy-expected-rq-timeout-ms"))
	for _, bad := range []string{"", "bad header", "a:b", "grpc-timeout"} {
		assert.Panics(t, func() { Milliseconds(bad) }, "%q", bad)
	}
	assert.PanicsWithValue(t, `deadline: Milliseconds: invalid header name "a:b"`, func() { Milliseconds("a:b") })
}

// TestFormatsAreTheParsers: the names the parser knows are the constants'.
func TestFormatsAreTheParsers(t *testing.T) {
	assert.Equal(t, deadlinefmt.GRPC, string(GRPCTimeout))
	assert.Equal(t, deadlinefmt.Envoy, string(EnvoyTimeout))
	for _, f := range []Format{GRPCTimeout, EnvoyTimeout, ConnectTimeout} {
		assert.Equal(t, []Format{f}, deadlinefmt.Check("f", []Format{f}), "canonical")
	}
}

func TestSentWithoutOne(t *testing.T) {
	d, ok := Sent(context.Background())
	assert.False(t, ok)
	assert.Zero(t, d)
}
