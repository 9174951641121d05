package retryhttp

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/retryhttp/retryhttp/stream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sseServer serves event streams: each request gets the next of streams,
// written as it is, then flushed; the last one is repeated.
type sseServer struct {
	*httptest.Server
	mu      sync.Mutex
	streams []string
	n       int
}

func newSSEServer(t *testing.T, streams ...string) *sseServer {
	s := &sseServer{streams: streams}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		body := s.streams[min(s.n, len(s.streams)-1)]
		s.n++
		s.mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, body)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *sseServer) requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

func streamText(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	return string(b)
}

// TestStreamErrorFirstIsRetried: a 200 stream whose first event is an
// LLM API's error is retried, in each vendor's shape, and the good stream
// that follows reaches the caller byte for byte; a final error event, and
// a stream whose first event is data, are returned at once.
func TestStreamErrorFirstIsRetried(t *testing.T) {
	const good = "event: message_start\ndata: {\"type\":\"message_start\"}\n\nevent: message_stop\ndata: {}\n\n"
	for _, tt := range []struct {
		name, first string
		sent        int
	}{
		{"Anthropic overloaded", "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n", 2},
		{"Anthropic rate limited", "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\",\"message\":\"slow down\"}}\n\n", 2},
		{"OpenAI chat completions", "data: {\"error\":{\"message\":\"The server had an error\",\"type\":\"server_error\",\"code\":null}}\n\n", 2},
		{"OpenAI responses", "event: error\ndata: {\"type\":\"error\",\"code\":\"server_error\",\"message\":\"boom\"}\n\n", 2},
		{"a final error", "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"no\"}}\n\n", 1},
		{"data first", good, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := newSSEServer(t, tt.first, good)
			var retries atomic.Int32
			tr := New(WithStreams(), WithBackoff(noDelay), WithOnRetry(func(RetryEvent) { retries.Add(1) }))
			defer tr.CloseIdleConnections()
			resp, err := tr.RoundTrip(get(t, srv.URL))
			require.NoError(t, err)
			want := good
			if tt.sent == 1 {
				want = tt.first
			}
			assert.Equal(t, want, streamText(t, resp), "the stream the caller reads")
			assert.Equal(t, tt.sent, srv.requests(), "requests at the server")
			assert.Equal(t, int32(tt.sent-1), retries.Load())
			assert.Equal(t, tt.sent, Attempts(resp))
		})
	}
}

func noDelay(int, time.Duration, float64) time.Duration { return 0 }

// TestStreamErrorFirstOfAPostIsRetriedWhenResendable: a generation asked
// for by a POST is retried on its error event only when it may be sent
// again (declared resendable); otherwise the error reaches the caller.
func TestStreamErrorFirstOfAPostIsRetriedWhenResendable(t *testing.T) {
	const overloaded = "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\"}}\n\n"
	for _, resendable := range []bool{false, true} {
		t.Run("resendable="+strconv.FormatBool(resendable), func(t *testing.T) {
			srv := newSSEServer(t, overloaded, "data: ok\n\n")
			opts := []Option{WithStreams(), WithBackoff(noDelay)}
			if resendable {
				opts = append(opts, WithResendable(func(*http.Request) bool { return true }))
			}
			tr := New(opts...)
			defer tr.CloseIdleConnections()
			req, err := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(`{"stream":true}`))
			require.NoError(t, err)
			resp, err := tr.RoundTrip(req)
			require.NoError(t, err)
			body := streamText(t, resp)
			if resendable {
				assert.Equal(t, "data: ok\n\n", body)
				assert.Equal(t, 2, srv.requests())
			} else {
				assert.Equal(t, overloaded, body)
				assert.Equal(t, 1, srv.requests())
			}
		})
	}
}

// TestStreamWithoutEventIsReturnedAtTheWait: a stream that sends no event
// within the wait is returned as it is, and the caller reads what the
// server sends later.
func TestStreamWithoutEventIsReturnedAtTheWait(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, ": waiting\n")
		w.(http.Flusher).Flush()
		<-release
		io.WriteString(w, "data: late\n\n")
	}))
	defer srv.Close()
	defer close(release)
	tr := New(WithStreams(stream.FirstEventWait(20 * time.Millisecond)))
	defer tr.CloseIdleConnections()
	resp, err := tr.RoundTrip(get(t, srv.URL))
	require.NoError(t, err, "returned at the wait, the server still silent")
	release <- struct{}{}
	assert.Equal(t, ": waiting\ndata: late\n\n", streamText(t, resp))
}

// cutServer serves one stream of events with ids 1 to n, each of them with
// a retry field, resuming after Last-Event-ID, and cuts the connection in
// the middle of an event cuts times.
type cutServer struct {
	*httptest.Server
	mu       sync.Mutex
	lastIDs  []string // the Last-Event-ID of each request
	cutsLeft int
}

func newCutServer(t *testing.T, n, cuts int) *cutServer {
	s := &cutServer{cutsLeft: cuts}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.lastIDs = append(s.lastIDs, r.Header.Get("Last-Event-ID"))
		cut := s.cutsLeft > 0
		if cut {
			s.cutsLeft--
		}
		s.mu.Unlock()
		from := 1
		if id := r.Header.Get("Last-Event-ID"); id != "" {
			from, _ = strconv.Atoi(id)
			from++
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "retry: 3\n\n")
		for i := from; i <= n; i++ {
			if cut && i == from+1 {
				io.WriteString(w, "id: "+strconv.Itoa(i)+"\ndata: half")
				w.(http.Flusher).Flush()
				panic(http.ErrAbortHandler) // cut, without the last chunk
			}
			fmt.Fprintf(w, "id: %d\ndata: event %d\n\n", i, i)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

// TestStreamCutIsResumed: a GET stream cut 5 times in the middle of an
// event delivers every event exactly once, in order, each reconnect
// carrying the last id read and waiting the stream's retry field.
func TestStreamCutIsResumed(t *testing.T) {
	const n, cuts = 12, 5
	srv := newCutServer(t, n, cuts)
	var mu sync.Mutex
	var delays []time.Duration
	tr := New(WithStreams(), WithOnRetry(func(e RetryEvent) {
		mu.Lock()
		delays = append(delays, e.Delay)
		mu.Unlock()
		assert.True(t, e.Resume)
	}))
	defer tr.CloseIdleConnections()
	resp, err := tr.RoundTrip(get(t, srv.URL))
	require.NoError(t, err)
	body := streamText(t, resp)
	var want strings.Builder
	want.WriteString("retry: 3\n\n")
	for i := 1; i <= n; i++ {
		if i > 1 && i <= cuts+1 {
			want.WriteString("retry: 3\n\n") // each resumed body's first line
		}
		fmt.Fprintf(&want, "id: %d\ndata: event %d\n\n", i, i)
	}
	assert.Equal(t, want.String(), body, "every event once, in order, no half one")
	assert.Equal(t, []string{"", "1", "2", "3", "4", "5"}, srv.lastIDs, "Last-Event-ID of each request")
	assert.Equal(t, []time.Duration{3 * time.Millisecond, 3 * time.Millisecond, 3 * time.Millisecond, 3 * time.Millisecond, 3 * time.Millisecond}, delays, "the retry field waited")
}

// TestStreamResumesEndAtTheLimit: a stream cut more times in a row than
// its limit ends the read with a *stream.Error.
func TestStreamResumesEndAtTheLimit(t *testing.T) {
	srv := newCutServer(t, 20, 10)
	tr := New(WithStreams(stream.Limit(2)), WithoutBudget())
	defer tr.CloseIdleConnections()
	resp, err := tr.RoundTrip(get(t, srv.URL))
	require.NoError(t, err)
	_, err = io.ReadAll(resp.Body)
	resp.Body.Close()
	var se *stream.Error
	require.ErrorAs(t, err, &se)
	assert.Equal(t, int64(3), se.Events, "one event from each of the 3 bodies")
	assert.Equal(t, 2, se.Resumes)
	assert.Len(t, srv.lastIDs, 3)
}

// TestStreamPostCutIsNeverResent: a POST stream cut after its first event
// reached the caller is never sent again, and ends with a *stream.Error
// saying what was read.
func TestStreamPostCutIsNeverResent(t *testing.T) {
	srv := newCutServer(t, 5, 1)
	tr := New(WithStreams(), WithResendable(func(*http.Request) bool { return true }))
	defer tr.CloseIdleConnections()
	req, err := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader("{}"))
	require.NoError(t, err)
	resp, err := tr.RoundTrip(req)
	require.NoError(t, err)
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	var se *stream.Error
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "retry: 3\n\nid: 1\ndata: event 1\n\n", string(b), "whole events only")
	assert.Equal(t, int64(len(b)), se.Read)
	assert.Equal(t, int64(1), se.Events)
	assert.Len(t, srv.lastIDs, 1, "one request at the server")
	assert.False(t, errors.Is(err, io.EOF))
}

// TestStreamWithoutIDIsNotResumed: a GET stream whose server set no id is
// not resumed: its cut ends the read.
func TestStreamWithoutIDIsNotResumed(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: one\n\ndata: tw")
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	}))
	defer srv.Close()
	tr := New(WithStreams())
	defer tr.CloseIdleConnections()
	resp, err := tr.RoundTrip(get(t, srv.URL))
	require.NoError(t, err)
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	var se *stream.Error
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "data: one\n\n", string(b))
	assert.Equal(t, int32(1), n.Load())
}

// pausedCut is an event stream body that gives its bytes, sleeps for
// pause (virtual time, in a synctest bubble), and fails as a cut does.
type pausedCut struct {
	r     io.Reader
	pause time.Duration
}

func (b *pausedCut) Read(p []byte) (int, error) {
	if n, _ := b.r.Read(p); n > 0 {
		return n, nil
	}
	time.Sleep(b.pause)
	return 0, io.ErrUnexpectedEOF
}

func (b *pausedCut) Close() error { return nil }

// TestStreamHealthyPeriodCountsResumesAfresh: with a limit of one resume
// in a row, a stream that ran 31 s with an event after its resume may be
// resumed again; one cut at once after its resume may not.
func TestStreamHealthyPeriodCountsResumesAfresh(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pauses := []time.Duration{0, 31 * time.Second, 0}
		var lastIDs []string
		base := rtFunc(func(r *http.Request) (*http.Response, error) {
			n := len(lastIDs)
			lastIDs = append(lastIDs, r.Header.Get("Last-Event-ID"))
			body := &pausedCut{r: strings.NewReader(fmt.Sprintf("id: %d\ndata: %d\n\n", n+1, n+1)), pause: pauses[min(n, 2)]}
			return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: body, Request: r}, nil
		})
		tr := New(WithBase(base), WithStreams(stream.Limit(1)), WithoutBudget(), WithBackoff(noDelay))
		resp, err := tr.RoundTrip(get(t, "http://feed.test/events"))
		require.NoError(t, err)
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		var se *stream.Error
		require.ErrorAs(t, err, &se)
		assert.Equal(t, "id: 1\ndata: 1\n\nid: 2\ndata: 2\n\nid: 3\ndata: 3\n\n", string(b))
		assert.Equal(t, []string{"", "1", "2"}, lastIDs, "resumed after the healthy period, not after the quick cut")
		assert.Equal(t, 2, se.Resumes)
	})
}
