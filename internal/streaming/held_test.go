package streaming

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/retryhttp/retryhttp/internal/eventstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// closeCount is a body that counts its closes, and whose reads block
// until released once src is spent.
type closeCount struct {
	src     io.Reader
	release chan struct{}
	err     error
	closes  int
}

func (c *closeCount) Read(p []byte) (int, error) {
	n, err := c.src.Read(p)
	if err == io.EOF && c.release != nil {
		<-c.release
		return 0, c.err
	}
	return n, err
}

func (c *closeCount) Close() error { c.closes++; return nil }

func TestHeldGivesTheStreamByteForByte(t *testing.T) {
	body := &closeCount{src: strings.NewReader("id: 1\ndata: a\n\ndata: b\n\n")}
	h := Hold(body, eventstream.Limits{})
	require.True(t, h.Wait(time.Second, nil))
	ev, ok := h.First()
	require.True(t, ok)
	assert.Equal(t, "a", string(ev.Data))
	assert.NoError(t, h.Failed())
	b, err := io.ReadAll(h)
	require.NoError(t, err)
	assert.Equal(t, "id: 1\ndata: a\n\ndata: b\n\n", string(b))
	require.NoError(t, h.Close())
	require.NoError(t, h.Close())
	assert.Equal(t, 1, body.closes, "closed once")
}

func TestHeldWaitEndsAtItsBound(t *testing.T) {
	release := make(chan struct{})
	body := &closeCount{src: strings.NewReader(": hello\n"), release: release, err: io.EOF}
	h := Hold(body, eventstream.Limits{})
	assert.False(t, h.Wait(time.Millisecond, nil), "no event within the wait")
	_, ok := h.First()
	assert.False(t, ok)
	assert.False(t, h.Wait(0, nil))
	cancel := make(chan struct{})
	close(cancel)
	assert.False(t, h.Wait(time.Hour, cancel), "cancelled")
	close(release)
	b, err := io.ReadAll(h)
	require.NoError(t, err)
	assert.Equal(t, ": hello\n", string(b), "what came, once the body ends")
	assert.NoError(t, h.Failed(), "a stream that ends is no failure")
}

func TestHeldFailed(t *testing.T) {
	release := make(chan struct{})
	close(release)
	boom := errors.New("reset")
	h := Hold(&closeCount{src: strings.NewReader("data: par"), release: release, err: boom}, eventstream.Limits{})
	require.True(t, h.Wait(time.Second, nil))
	assert.ErrorIs(t, h.Failed(), boom)
	b, err := io.ReadAll(h)
	assert.ErrorIs(t, err, boom, "the reader meets the failure after the bytes that came")
	assert.Equal(t, "data: par", string(b))
}

func TestHeldTooLongPassesThrough(t *testing.T) {
	long := "data: " + strings.Repeat("x", 100) + "\n\n"
	h := Hold(io.NopCloser(strings.NewReader(long)), eventstream.Limits{Line: 10, Event: 20})
	require.True(t, h.Wait(time.Second, nil))
	_, ok := h.First()
	assert.False(t, ok)
	assert.NoError(t, h.Failed(), "a limit leaves the stream to its reader")
	b, err := io.ReadAll(h)
	require.NoError(t, err)
	assert.Equal(t, long, string(b))
}
