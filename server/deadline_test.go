package server

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/backoff"
	"github.com/retryhttp/retryhttp/deadline"
	"github.com/retryhttp/retryhttp/internal/deadlinefmt"
	"github.com/retryhttp/retryhttp/internal/layer"
	"github.com/retryhttp/retryhttp/internal/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// malformedSeen records what OnMalformedDeadline reports.
type malformedSeen struct{ values []string }

func (m *malformedSeen) option() Option {
	return OnMalformedDeadline(func(_ *http.Request, f deadline.Format, v string) {
		m.values = append(m.values, string(f)+"="+v)
	})
}

// serveDeadline serves a GET carrying header through Handler with opts,
// in a synctest bubble's time, and returns the time left on the handler's
// context (-1 without a deadline; the handler not run: -2), the response,
// and the malformed values reported.
func serveDeadline(t *testing.T, parent context.Context, header http.Header, opts ...Option) (time.Duration, *http.Response, []string) {
	t.Helper()
	var m malformedSeen
	left := time.Duration(-2)
	h := Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		left = -1
		if d, ok := r.Context().Deadline(); ok {
			left = time.Until(d)
		}
	}), append([]Option{m.option()}, opts...)...)
	req := httptest.NewRequest(http.MethodGet, "/", nil).WithContext(parent)
	req.Header = header
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return left, rec.Result(), m.values
}

func TestDeadline(t *testing.T) {
	const none, notRun = time.Duration(-1), time.Duration(-2)
	every := Deadline(deadline.GRPCTimeout, deadline.EnvoyTimeout, deadline.ConnectTimeout, "X-Deadline-Ms")
	ms250 := 250*time.Millisecond - defaultMargin // 250 ms sent
	tests := []struct {
		name      string
		header    http.Header
		opts      []Option
		left      time.Duration
		malformed []string
	}{
		{"grpc-timeout", http.Header{"Grpc-Timeout": {"250m"}}, nil, ms250, nil},
		{"grpc-timeout in seconds", http.Header{"Grpc-Timeout": {"2S"}}, nil, 2*time.Second - defaultMargin, nil},
		{"Envoy", http.Header{"X-Envoy-Expected-Rq-Timeout-Ms": {"250"}}, nil, ms250, nil},
		{"Connect", http.Header{"Connect-Timeout-Ms": {"250"}}, nil, ms250, nil},
		{"a name of our own", http.Header{"X-Deadline-Ms": {"250"}}, nil, ms250, nil},
		{"no header", http.Header{}, nil, none, nil},
		{"a format not read", http.Header{"X-Other-Ms": {"250"}}, nil, none, nil},
		{"margin", http.Header{"Grpc-Timeout": {"250m"}}, []Option{DeadlineMargin(10 * time.Millisecond)}, 240 * time.Millisecond, nil},
		{"no margin", http.Header{"Grpc-Timeout": {"250m"}}, []Option{DeadlineMargin(0)}, 250 * time.Millisecond, nil},
		{"capped", http.Header{"Grpc-Timeout": {"2H"}}, nil, defaultMaxDeadline, nil},
		{"capped by the service", http.Header{"Grpc-Timeout": {"2S"}}, []Option{MaxDeadline(500 * time.Millisecond)}, 500 * time.Millisecond, nil},
		{"a cap below the margin", http.Header{"Grpc-Timeout": {"10m"}}, []Option{MaxDeadline(time.Millisecond)}, time.Millisecond, nil},
		{"longer than a Duration", http.Header{"Grpc-Timeout": {"99999999H"}}, nil, defaultMaxDeadline, nil},
		{"Envoy's huge", http.Header{"X-Envoy-Expected-Rq-Timeout-Ms": {"9999999999"}}, nil, defaultMaxDeadline, nil},
		{"expired: 0n", http.Header{"Grpc-Timeout": {"0n"}}, nil, notRun, nil},
		{"expired: within the margin", http.Header{"Connect-Timeout-Ms": {"1"}}, nil, notRun, nil},
		{"expired: the margin", http.Header{"Grpc-Timeout": {"2m"}}, nil, notRun, nil},
		{"the margin and a nanosecond", http.Header{"Grpc-Timeout": {"2000001n"}}, nil, time.Nanosecond, nil},
		{"expired: 1 µs", http.Header{"Grpc-Timeout": {"1u"}}, nil, notRun, nil},
		{"Envoy's 0: no timeout", http.Header{"X-Envoy-Expected-Rq-Timeout-Ms": {"0"}}, nil, none, nil},
		{"Connect's 0: malformed", http.Header{"Connect-Timeout-Ms": {"0"}}, nil, none, []string{"Connect-Timeout-Ms=0"}},
		{"negative", http.Header{"X-Deadline-Ms": {"-250"}}, nil, none, []string{"X-Deadline-Ms=-250"}},
		{"negative gRPC", http.Header{"Grpc-Timeout": {"-1S"}}, nil, none, []string{"Grpc-Timeout=-1S"}},
		{"overflowing", http.Header{"Connect-Timeout-Ms": {"99999999999999999999"}}, nil, none, []string{"Connect-Timeout-Ms=99999999999999999999"}},
		{"nine digits of gRPC", http.Header{"Grpc-Timeout": {"123456789m"}}, nil, none, []string{"Grpc-Timeout=123456789m"}},
		{"not a number", http.Header{"X-Envoy-Expected-Rq-Timeout-Ms": {"soon"}}, nil, none, []string{"X-Envoy-Expected-Rq-Timeout-Ms=soon"}},
		{"a fraction", http.Header{"Connect-Timeout-Ms": {"2.5"}}, nil, none, []string{"Connect-Timeout-Ms=2.5"}},
		{"no unit", http.Header{"Grpc-Timeout": {"250"}}, nil, none, []string{"Grpc-Timeout=250"}},
		{"a wrong unit", http.Header{"Grpc-Timeout": {"250ms"}}, nil, none, []string{"Grpc-Timeout=250ms"}},
		{"a unit where none belongs", http.Header{"X-Deadline-Ms": {"250ms"}}, nil, none, []string{"X-Deadline-Ms=250ms"}},
		{"spaces around", http.Header{"Grpc-Timeout": {" 250m\t"}}, nil, ms250, nil},
		{"a space inside", http.Header{"Grpc-Timeout": {"250 m"}}, nil, none, []string{"Grpc-Timeout=250 m"}},
		{"empty", http.Header{"Connect-Timeout-Ms": {""}}, nil, none, []string{"Connect-Timeout-Ms="}},
		{"a list", http.Header{"Connect-Timeout-Ms": {"250, 100"}}, nil, none, []string{"Connect-Timeout-Ms=250, 100"}},
		{"repeated, the shortest counts", http.Header{"Grpc-Timeout": {"3S", "250m", "1S"}}, nil, ms250, nil},
		{"repeated, one malformed", http.Header{"Connect-Timeout-Ms": {"oops", "250"}}, nil, ms250, []string{"Connect-Timeout-Ms=oops"}},
		{"repeated, one expired", http.Header{"Grpc-Timeout": {"3S", "0n"}}, nil, notRun, nil},
		{"several formats, the shortest counts", http.Header{
			"Grpc-Timeout":                   {"1S"},
			"X-Envoy-Expected-Rq-Timeout-Ms": {"400"},
			"Connect-Timeout-Ms":             {"250"},
			"X-Deadline-Ms":                  {"300"},
		}, nil, ms250, nil},
		{"several formats, all malformed", http.Header{
			"Grpc-Timeout":       {"1s"},
			"Connect-Timeout-Ms": {"-1"},
		}, nil, none, []string{"Grpc-Timeout=1s", "Connect-Timeout-Ms=-1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				left, resp, malformed := serveDeadline(t, t.Context(), tt.header, append([]Option{every}, tt.opts...)...)
				assert.Equal(t, tt.left, left, "time left in the handler")
				assert.Equal(t, tt.malformed, malformed, "malformed values reported")
				if tt.left == notRun {
					assert.Equal(t, http.StatusGatewayTimeout, resp.StatusCode)
					assert.Equal(t, "false", resp.Header.Get(layer.ShouldRetryHeader))
					return
				}
				assert.Equal(t, http.StatusOK, resp.StatusCode)
			})
		})
	}
}

func TestHandlerDeadlineNeverExtendsItsOwn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		defer cancel()
		left, _, _ := serveDeadline(t, ctx, http.Header{"Grpc-Timeout": {"5S"}}, Deadline(deadline.GRPCTimeout))
		assert.Equal(t, 100*time.Millisecond, left)
	})
}

func TestHandlerWithoutDeadlineOptionIgnoresHeaders(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		left := time.Duration(-2)
		h := Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			left = -1
			if d, ok := r.Context().Deadline(); ok {
				left = time.Until(d)
			}
		}))
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.Header.Set("Grpc-Timeout", "0n")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		resp := rec.Result()
		assert.Equal(t, time.Duration(-1), left)
		assert.Equal(t, http.StatusOK, resp.StatusCode)
	})
}

func TestOnMalformedDeadlineHooksAddUp(t *testing.T) {
	var calls []string
	h := Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}),
		Deadline(deadline.ConnectTimeout),
		OnMalformedDeadline(func(*http.Request, deadline.Format, string) { calls = append(calls, "first") }),
		OnMalformedDeadline(func(*http.Request, deadline.Format, string) { calls = append(calls, "second") }))
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.Header.Set("Connect-Timeout-Ms", "x")
	h.ServeHTTP(httptest.NewRecorder(), req)
	assert.Equal(t, []string{"first", "second"}, calls)
}

func TestOptionsPanic(t *testing.T) {
	h := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	assert.Panics(t, func() { Handler(nil) })
	assert.Panics(t, func() { Handler(h, nil) })
	assert.Panics(t, func() { Deadline() })
	assert.Panics(t, func() { Deadline("a b") })
	assert.Panics(t, func() { MaxDeadline(0) })
	assert.Panics(t, func() { DeadlineMargin(-time.Nanosecond) })
	assert.Panics(t, func() { OnMalformedDeadline(nil) })
	assert.PanicsWithValue(t, "server: Handler: nil handler", func() { Handler(nil) })
	assert.PanicsWithValue(t, "server: Handler: nil Option", func() { Handler(h, nil) })
	assert.PanicsWithValue(t, "server: Deadline: no deadline.Format", func() { Deadline() })
	assert.PanicsWithValue(t, "server: MaxDeadline: duration must be positive, got 0s", func() { MaxDeadline(0) })
}

// TestTuningWithoutDeadlinePanics: the options that only tune Deadline do
// nothing without it, and Handler refuses them, naming the first; with
// Deadline they are accepted in any order.
func TestTuningWithoutDeadlinePanics(t *testing.T) {
	h := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	hook := OnMalformedDeadline(func(*http.Request, deadline.Format, string) {})
	assert.PanicsWithValue(t, "server: Handler: DeadlineMargin does nothing without Deadline", func() { Handler(h, DeadlineMargin(time.Millisecond)) })
	assert.PanicsWithValue(t, "server: Handler: MaxDeadline does nothing without Deadline", func() { Handler(h, MaxDeadline(time.Second), DeadlineMargin(0)) })
	assert.PanicsWithValue(t, "server: Handler: OnMalformedDeadline does nothing without Deadline", func() { Handler(h, hook) })
	assert.NotPanics(t, func() { Handler(h, DeadlineMargin(0), MaxDeadline(time.Second), hook, Deadline(deadline.GRPCTimeout)) })
}

// TestDeadlineCarriedThroughAService serves a request with 300 ms left
// through a Handler whose handler calls a dependency through a Transport
// with the request's context: the dependency is sent the time left, less
// the margin and the time the handler took before calling.
func TestDeadlineCarriedThroughAService(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var sent []string
		dep := roundTripperFunc(func(r *http.Request) (*http.Response, error) {
			sent = append(sent, r.Header.Get("Grpc-Timeout"))
			return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: http.NoBody, Request: r}, nil
		})
		client := &http.Client{Transport: retryhttp.New(retryhttp.WithBase(dep), retryhttp.WithDeadlineHeader(deadline.GRPCTimeout))}
		h := Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			time.Sleep(20 * time.Millisecond) // work before the call
			req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, "http://dep.test/", nil)
			require.NoError(t, err)
			resp, err := client.Do(req)
			require.NoError(t, err)
			resp.Body.Close()
		}), Deadline(deadline.GRPCTimeout))
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.Header.Set("Grpc-Timeout", "300m")
		h.ServeHTTP(httptest.NewRecorder(), req)
		assert.Equal(t, []string{"278m"}, sent)
	})
}

// TestExpiredRequestSignalledAbove answers a request whose deadline has
// passed through a real server: the caller above, a Transport, does not
// retry the 504.
func TestExpiredRequestSignalledAbove(t *testing.T) {
	runs := 0
	srv := httptest.NewServer(Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { runs++ }), Deadline(deadline.GRPCTimeout)))
	defer srv.Close()
	tr := retryhttp.New(retryhttp.WithBackoff(backoff.Constant(0)))
	defer tr.CloseIdleConnections()
	req, err := http.NewRequest(http.MethodGet, srv.URL, nil)
	require.NoError(t, err)
	req.Header.Set("Grpc-Timeout", "0n")
	resp, err := tr.RoundTrip(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusGatewayTimeout, resp.StatusCode)
	assert.Equal(t, 1, retryhttp.Attempts(resp))
	assert.Zero(t, runs, "the handler never ran")
}

// deadlineSeeds are values of each format, well-formed and not, for the
// seed corpus of FuzzHandlerDeadline; the parser's own table has more.
var deadlineSeeds = [][2]string{
	{"Grpc-Timeout", "250m"}, {"Grpc-Timeout", "0n"}, {"Grpc-Timeout", "99999999H"},
	{"Grpc-Timeout", "000000007m"}, {"Grpc-Timeout", "5s"}, {"Grpc-Timeout", " 5m\t"},
	{"Grpc-Timeout", "5m,6m"}, {"Grpc-Timeout", "1\u00b5"},
	{"X-Envoy-Expected-Rq-Timeout-Ms", "250"}, {"X-Envoy-Expected-Rq-Timeout-Ms", "0"},
	{"X-Envoy-Expected-Rq-Timeout-Ms", "10000000000"}, {"X-Envoy-Expected-Rq-Timeout-Ms", "-1"},
	{"Connect-Timeout-Ms", "250"}, {"Connect-Timeout-Ms", "0"}, {"Connect-Timeout-Ms", "250m"},
	{"X-Deadline-Ms", "1"}, {"X-Deadline-Ms", "1,1"}, {"X-Deadline-Ms", "NaN"},
}

// FuzzHandlerDeadline serves requests with any value in a format of any
// name and any grpc-timeout, with any margin, in a synctest bubble, where
// the time left is exact: the handler runs with the shortest well-formed
// time less the margin, capped, or without a deadline when there is none;
// or, when the margin takes it all, it is not run and the answer is 504
// with the signal; and each malformed value is reported once per format
// that reads it.
func FuzzDeadline(f *testing.F) {
	for _, tt := range deadlineSeeds {
		f.Add(tt[0], tt[1], "250m", int64(defaultMargin))
	}
	f.Add("X-Deadline-Ms", "1", "0n", int64(0))
	f.Add("Connect-Timeout-Ms", "9999999999", "99999999H", int64(math.MaxInt64))
	f.Add("grpc-timeout", "1S", "1u", int64(-1))
	f.Fuzz(func(t *testing.T, name, value, grpc string, margin int64) {
		if name == "" || !wire.ValidHeaderName(name) {
			return
		}
		format := deadline.Format(http.CanonicalHeaderKey(name))
		formats := []deadline.Format{format, deadline.GRPCTimeout}
		m := nonNegative(margin)
		const limit = time.Second
		header := http.Header{string(format): {value}}
		header.Add(string(deadline.GRPCTimeout), grpc)

		var least time.Duration
		found, malformed := false, 0
		for _, f := range formats {
			for _, v := range header[string(f)] {
				switch d, kind := deadlinefmt.Parse(string(f), v); kind {
				case deadlinefmt.Set:
					if !found || d < least {
						least, found = d, true
					}
				case deadlinefmt.Malformed:
					malformed++
				}
			}
		}
		synctest.Test(t, func(t *testing.T) {
			left, resp, reported := serveDeadline(t, t.Context(), header,
				Deadline(formats...), MaxDeadline(limit), DeadlineMargin(m))
			if len(reported) != malformed {
				t.Fatalf("%q: %d malformed values reported (%q), want %d", header, len(reported), reported, malformed)
			}
			switch {
			case !found:
				if left != -1 || resp.StatusCode != http.StatusOK {
					t.Fatalf("%q: no deadline sent, but the handler saw %v left, answered %d", header, left, resp.StatusCode)
				}
			case least <= m:
				if left != -2 || resp.StatusCode != http.StatusGatewayTimeout || resp.Header.Get(layer.ShouldRetryHeader) != "false" {
					t.Fatalf("%q, margin %v: handler saw %v left, answered %d %q; want it not run, 504", header, m, left, resp.StatusCode, resp.Header)
				}
			default:
				if want := min(least-m, limit); left != want || resp.StatusCode != http.StatusOK {
					t.Fatalf("%q, margin %v: handler saw %v left, answered %d; want %v left", header, m, left, resp.StatusCode, want)
				}
			}
		})
	})
}

// roundTripperFunc makes a function an http.RoundTripper.
type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// nonNegative maps an int64 onto the Durations from 0 to the largest.
func nonNegative(x int64) time.Duration {
	if x < 0 {
		return time.Duration(-(x + 1))
	}
	return time.Duration(x)
}
