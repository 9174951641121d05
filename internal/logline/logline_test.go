package logline

import (
	"bytes"
	"errors"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAttemptLinesHoldNoSecret(t *testing.T) {
	var buf bytes.Buffer
	l := Log{L: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	req, err := http.NewRequest(http.MethodGet, "https://user:pw@api.example/v1/items?token=secret", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer secret")
	cause := &url.Error{Op: "Get", URL: req.URL.String(), Err: errors.New("connection reset")}
	peer := netip.MustParseAddrPort("192.0.2.1:443")

	l.Attempt(Attempt{Req: req, N: 1, Err: cause, Peer: peer})
	l.Retry(Attempt{Req: req, N: 1, Status: 503}, time.Second, 2*time.Second, false, 0)
	l.GiveUp(slog.LevelInfo, Attempt{Req: req, N: 3, Status: 503}, "too little time left", &Late{Delay: time.Second, Left: -time.Second, Typical: time.Second}, false, 0)

	out := buf.String()
	assert.NotContains(t, out, "secret")
	assert.NotContains(t, out, "pw")
	assert.Contains(t, out, `url=https://api.example/v1/items`)
	assert.Contains(t, out, `error="connection reset"`)
	assert.Contains(t, out, "network.peer.address=192.0.2.1 network.peer.port=443")
	assert.Contains(t, out, "delay=1s time_left=2s")
	assert.Contains(t, out, "host_latency=1s")
	assert.Contains(t, out, "delay=1s time_left=0s", "a time left past the deadline is none, never negative")
	assert.NotContains(t, out, "time_left=-")
}

func TestLinesBelowTheLevelAreNotBuilt(t *testing.T) {
	var buf bytes.Buffer
	l := Log{L: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))}
	req, _ := http.NewRequest(http.MethodGet, "https://api.example/", nil)
	a := Attempt{Req: req, N: 1}
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		l.Attempt(a)
		l.Retry(a, time.Second, 0, false, 0)
		l.Hedge(req, 2, time.Millisecond)
		Log{}.GiveUp(slog.LevelInfo, a, "x", nil, false, 0)
	}))
	assert.Empty(t, buf.String())
}
