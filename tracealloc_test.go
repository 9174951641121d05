//go:build !race

package retryhttp

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The race detector makes sync.Pool drop what it is given, and a traced
// attempt's hooks are pooled: these pins run without it.

// TestTracedAttemptAllocations pins the cost of an attempt traced as those
// of an *http.Transport are (the default base) when the Transport has a
// hook, which finds its peer and counts the sends its base makes again: the
// trace, which holds the attempt's request, its hooks pooled, and for a
// key-less POST the guard's besides, with which the trace's hooks are
// composed (one of them GetConn, so that its sends take turns while its
// host's HTTP/2 connection is replaced), and the Done channel that
// net/http's Transport asks the guard's context for, to which the context
// it derives is tied by two more (the context package's function and
// stop, where it would otherwise start a goroutine).
func TestTracedAttemptAllocations(t *testing.T) {
	payload := bytes.Repeat([]byte("p"), 1024)
	for _, tt := range []struct {
		name string
		make func() (*http.Request, func())
		max  float64
	}{
		{"GET", func() (*http.Request, func()) {
			req, _ := http.NewRequest(http.MethodGet, "http://svc.test/items", nil)
			return req, func() {}
		}, 1},
		{"keyed POST", func() (*http.Request, func()) { return post(payload, true, "k-1") }, 1},
		{"key-less POST", func() (*http.Request, func()) { return post(payload, true, "") }, 10},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req, reset := tt.make()
			tr := New(WithBase(tracedStub{newStub()}), WithOnRetry(func(RetryEvent) {}))
			assert.LessOrEqual(t, addedAllocs(t, tr, req, reset), tt.max)
		})
	}
}

// TestDefaultBaseSuccessAllocatesNothing pins the cost of a success over a
// base that unwraps to an *http.Transport, as the default base is: a host
// that has not failed lately has its attempts sent untraced, so that a GET
// and a keyed POST that succeed at once allocate nothing. Once the host
// failed, its attempts are traced, for one allocation each.
func TestDefaultBaseSuccessAllocatesNothing(t *testing.T) {
	get, _ := http.NewRequest(http.MethodGet, "http://svc.test/items", nil)
	keyed, reset := post(bytes.Repeat([]byte("p"), 1024), true, "k-1")
	tr := New(WithBase(tracedStub{newStub()}))
	assert.Zero(t, addedAllocs(t, tr, get, func() {}), "GET")
	assert.Zero(t, addedAllocs(t, tr, keyed, reset), "keyed POST")

	// The host failed: its attempts are traced, until one succeeds.
	failed := func() { tr.conns.FailedUntraced(get, false) }
	failed()
	require.True(t, tr.conns.Traces(get))
	assert.Equal(t, 1.0, addedAllocs(t, tr, get, failed), "GET to a host that failed")
}

// TestQuietLoggerSuccessAllocatesNothing pins the cost of a logger whose
// handler drops INFO and below: a GET that succeeds at once over the
// default base's path is sent as without a logger, untraced, with no
// allocation; at INFO, it is traced (one allocation), for the lines that
// name its peer and its base's resends.
func TestQuietLoggerSuccessAllocatesNothing(t *testing.T) {
	get, _ := http.NewRequest(http.MethodGet, "http://svc.test/items", nil)
	quiet := slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelError}))
	tr := New(WithBase(tracedStub{newStub()}), WithLogger(quiet))
	assert.Zero(t, addedAllocs(t, tr, get, func() {}), "a logger at ERROR")
	loud := slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo}))
	tr = New(WithBase(tracedStub{newStub()}), WithLogger(loud))
	assert.Equal(t, 1.0, addedAllocs(t, tr, get, func() {}), "a logger at INFO")
}
