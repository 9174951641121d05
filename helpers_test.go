package retryhttp

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// rtFunc is an in-memory RoundTripper.
type rtFunc func(*http.Request) (*http.Response, error)

func (f rtFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// countingBody counts its Close calls.
type countingBody struct {
	io.Reader
	closes atomic.Int32
}

func (b *countingBody) Close() error {
	b.closes.Add(1)
	return nil
}

func newCountingBody(s string) *countingBody { return &countingBody{Reader: strings.NewReader(s)} }

// script is an in-memory base transport that answers the i-th attempt with
// the i-th step (the last step repeats), records what it saw, and closes
// every request body it is given, as net/http's transport does.
type script struct {
	mu        sync.Mutex
	steps     []step
	attempts  int
	bodies    []string
	headers   []http.Header
	times     []time.Time
	responses []*countingBody
}

type step struct {
	status int
	header http.Header
	err    error
	body   string
}

func (s *script) RoundTrip(r *http.Request) (*http.Response, error) {
	var body []byte
	if r.Body != nil {
		body, _ = io.ReadAll(r.Body)
		r.Body.Close()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.steps[min(s.attempts, len(s.steps)-1)]
	s.attempts++
	s.bodies = append(s.bodies, string(body))
	s.headers = append(s.headers, r.Header.Clone())
	s.times = append(s.times, time.Now())
	if st.err != nil {
		return nil, st.err
	}
	b := newCountingBody(st.body)
	s.responses = append(s.responses, b)
	h := st.header
	if h == nil {
		h = http.Header{}
	}
	return &http.Response{StatusCode: st.status, Status: http.StatusText(st.status), Header: h.Clone(), Body: b, Request: r}, nil
}

func (s *script) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.attempts
}

// allClosed asserts that every response the script made, but the one
// returned to the caller, was closed exactly once.
func (s *script) requireDiscardedClosed(t *testing.T, returned *http.Response) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, b := range s.responses {
		if returned != nil && i == len(s.responses)-1 {
			require.EqualValues(t, 0, b.closes.Load(), "returned response body %d was closed", i+1)
			continue
		}
		require.EqualValues(t, 1, b.closes.Load(), "discarded response body %d closes", i+1)
	}
}

func statuses(codes ...int) []step {
	s := make([]step, len(codes))
	for i, c := range codes {
		s[i] = step{status: c, body: "body of attempt"}
	}
	return s
}

// newTestTransport returns a Transport over base whose jitter is fixed at r.
func newTestTransport(base http.RoundTripper, r float64, opts ...Option) *Transport {
	t := New(append([]Option{WithBase(base)}, opts...)...)
	t.rand = func() float64 { return r }
	t.snd.RecordEvery = 1 // every answer time: its tests count them
	return t
}

func get(t *testing.T, url string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	return req
}

func withBody(t *testing.T, ctx context.Context, method, url, body string, getBody bool) (*http.Request, *countingBody) {
	t.Helper()
	b := newCountingBody(body)
	req, err := http.NewRequestWithContext(ctx, method, url, b)
	require.NoError(t, err)
	req.ContentLength = int64(len(body))
	if getBody {
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader([]byte(body))), nil }
	}
	return req, b
}

// headerOf builds a header with one value for each canonical key of fields
// whose value is not empty, as fuzz tests build a server's response.
func headerOf(fields map[string]string) http.Header {
	h := http.Header{}
	for k, v := range fields {
		if v != "" {
			h[k] = []string{v}
		}
	}
	return h
}

// swapBase makes rt the base of t, made by New, and of its sender.
func (t *Transport) swapBase(rt http.RoundTripper) { t.base, t.snd.Base = rt, rt }
