package stream

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/retryhttp/retryhttp/classify"
	"github.com/retryhttp/retryhttp/internal/config"
	"github.com/retryhttp/retryhttp/internal/eventstream"
	"github.com/retryhttp/retryhttp/internal/streaming"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// held returns a response whose body is the stream s, held until its
// first event, as a Transport WithStreams holds it.
func held(t *testing.T, s string) *http.Response {
	t.Helper()
	h := streaming.Hold(io.NopCloser(strings.NewReader(s)), eventstream.Limits{})
	require.True(t, h.Wait(time.Second, nil))
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: h}
}

func TestErrors(t *testing.T) {
	retry := classify.Verdict{Decision: classify.Retry}
	throttle := classify.Verdict{Decision: classify.Retry, Throttle: true}
	final := classify.Verdict{Decision: classify.DontRetry}
	for _, tt := range []struct {
		name, stream string
		want         classify.Verdict
	}{
		{"Anthropic overloaded", "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n", retry},
		{"Anthropic api error", "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"api_error\"}}\n\n", retry},
		{"Anthropic rate limited", "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\"}}\n\n", throttle},
		{"Anthropic invalid request", "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\"}}\n\n", final},
		{"OpenAI chat server error", "data: {\"error\":{\"message\":\"x\",\"type\":\"server_error\",\"code\":null}}\n\n", retry},
		{"OpenAI chat rate limited by code", "data: {\"error\":{\"type\":\"requests\",\"code\":\"rate_limit_exceeded\"}}\n\n", throttle},
		{"OpenAI chat invalid", "data: {\"error\":{\"type\":\"invalid_request_error\",\"code\":\"bad\"}}\n\n", final},
		{"OpenAI responses server error", "event: error\ndata: {\"type\":\"error\",\"code\":\"server_error\",\"message\":\"x\"}\n\n", retry},
		{"OpenAI responses rate limited", "event: error\ndata: {\"type\":\"error\",\"code\":\"rate_limit_exceeded\"}\n\n", throttle},
		{"data", "data: {\"choices\":[]}\n\n", classify.Verdict{}},
		{"Anthropic's first event", "event: message_start\ndata: {\"type\":\"message_start\"}\n\n", classify.Verdict{}},
		{"an error event that is not JSON", "event: error\ndata: oops\n\n", classify.Verdict{}},
		{"no event", ": only a comment\n", classify.Verdict{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Errors().Classify(nil, held(t, tt.stream), nil))
		})
	}
	assert.Equal(t, classify.Verdict{}, Errors().Classify(nil, nil, errors.New("x")), "an error")
	assert.Equal(t, classify.Verdict{}, Errors().Classify(nil, &http.Response{Body: http.NoBody}, nil), "a response not held")
}

func TestFirst(t *testing.T) {
	resp := held(t, "id: 7\nevent: e\ndata: a\ndata: b\n\ndata: c\n\n")
	ev, ok := First(resp)
	require.True(t, ok)
	assert.Equal(t, Event{Type: "e", Data: []byte("a\nb"), ID: "7"}, ev)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Equal(t, "id: 7\nevent: e\ndata: a\ndata: b\n\ndata: c\n\n", string(b), "the event stays in the body")

	_, ok = First(nil)
	assert.False(t, ok)
	_, ok = First(held(t, ""))
	assert.False(t, ok, "no event")
}

func TestOptions(t *testing.T) {
	c := config.NewStream()
	FirstEventWait(time.Second)(&c)
	Limit(0)(&c)
	assert.Equal(t, config.Stream{FirstEventWait: time.Second, Limit: 0}, c)
	assert.PanicsWithValue(t, "stream: FirstEventWait: must be at least 1ms, got 0s", func() { FirstEventWait(0) })
	assert.PanicsWithValue(t, "stream: Limit: negative, got -1", func() { Limit(-1) })
}

func TestError(t *testing.T) {
	e := &Error{Read: 10, Events: 2, Resumes: 1, Err: io.ErrUnexpectedEOF}
	assert.Equal(t, "retryhttp: event stream failed after 2 events (10 bytes) read, 1 resumes: unexpected EOF", e.Error())
	assert.ErrorIs(t, e, io.ErrUnexpectedEOF)
}

// FuzzErrors feeds Errors a stream of any bytes: it never panics, judges
// only a held stream's first event, retries only what it names, and
// leaves the stream whole. Its seeds are in testdata/fuzz/FuzzErrors.
func FuzzErrors(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string) {
		h := streaming.Hold(io.NopCloser(strings.NewReader(s)), eventstream.Limits{})
		if !h.Wait(time.Second, nil) {
			t.Fatal("a stream in memory read in a second")
		}
		resp := &http.Response{StatusCode: http.StatusOK, Body: h}
		v := Errors().Classify(nil, resp, nil)
		ev, ok := First(resp)
		if !ok && v != (classify.Verdict{}) {
			t.Fatalf("judged a stream without an event: %+v", v)
		}
		if v.Decision == classify.Retry && !strings.Contains(string(ev.Data), "error") {
			t.Fatalf("retried an event that names no error: %q", ev.Data)
		}
		b, err := io.ReadAll(resp.Body)
		if err != nil || string(b) != s {
			t.Fatalf("the stream changed: %q, %v", b, err)
		}
	})
}
