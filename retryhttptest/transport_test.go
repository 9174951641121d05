package retryhttptest_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/iotest"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/retryhttptest"
)

// countingBody is a request body that counts its Close calls.
type countingBody struct {
	io.Reader
	closes atomic.Int32
}

func (b *countingBody) Close() error { b.closes.Add(1); return nil }

// request returns a request with a close-counting body, whose context ends
// after timeout unless timeout is 0.
func request(t *testing.T, method, url, body string, timeout time.Duration) (*http.Request, *countingBody) {
	t.Helper()
	ctx := t.Context()
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		t.Cleanup(cancel)
	}
	b := &countingBody{Reader: strings.NewReader(body)}
	req, err := http.NewRequestWithContext(ctx, method, url, b)
	require.NoError(t, err)
	return req, b
}

func TestTransportTiming(t *testing.T) {
	tests := []struct {
		name       string
		fault      retryhttptest.Fault
		timeout    time.Duration // of the request's context
		err        error
		elapsed    time.Duration
		executions int
	}{
		{"Delay", retryhttptest.Delay(time.Hour, retryhttptest.Pass()), 0, nil, time.Hour, 1},
		{"Delay of Status", retryhttptest.Delay(time.Minute, retryhttptest.Status(503)), 0, nil, time.Minute, 0},
		{"Delay past the deadline", retryhttptest.Delay(time.Hour, retryhttptest.Pass()), time.Minute, context.DeadlineExceeded, time.Minute, 0},
		{"Hang", retryhttptest.Hang(), 30 * time.Second, context.DeadlineExceeded, 30 * time.Second, 0},
		{"Delay then Hang", retryhttptest.Delay(time.Second, retryhttptest.Hang()), time.Minute, context.DeadlineExceeded, time.Minute, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tr := retryhttptest.NewTransport(echo, tt.fault)
				req, body := request(t, "POST", "http://svc.test/x", "payload", tt.timeout)
				start := time.Now()
				resp, err := tr.RoundTrip(req)
				assert.Equal(t, tt.elapsed, time.Since(start))
				if tt.err != nil {
					assert.Nil(t, resp)
					assert.ErrorIs(t, err, tt.err)
				} else {
					require.NoError(t, err)
					resp.Body.Close()
				}
				assert.Equal(t, tt.executions, tr.Executions())
				assert.Equal(t, []time.Time{start}, tr.Arrivals(), "arrival is before the delay")
				assert.EqualValues(t, 1, body.closes.Load(), "request body closes")
			})
		})
	}
}

func TestTransportConnectionFaults(t *testing.T) {
	tests := []struct {
		name       string
		fault      retryhttptest.Fault
		err        error
		executions int
		outcome    string
	}{
		{"ResetAfterRead", retryhttptest.ResetAfterRead(), syscall.ECONNRESET, 1, "reset"},
		{"CloseBeforeRead", retryhttptest.CloseBeforeRead(), io.EOF, 0, "close"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var seen string // the handler runs on the caller's goroutine
			tr := retryhttptest.NewTransport(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				seen = string(b)
			}), tt.fault)
			req, body := request(t, "POST", "http://svc.test/pay", "amount=10", 0)
			resp, err := tr.RoundTrip(req)
			assert.Nil(t, resp)
			assert.ErrorIs(t, err, tt.err)
			assert.Equal(t, tt.executions, tr.Executions())
			assert.Equal(t, []string{tt.outcome}, tr.Request("POST /pay").Outcomes)
			assert.EqualValues(t, 1, body.closes.Load(), "request body closes")
			if tt.executions > 0 {
				assert.Equal(t, "amount=10", seen, "the handler saw the whole body")
			}
		})
	}
}

func TestTransportResponseBody(t *testing.T) {
	const body = "hello, world!!" // 14 bytes
	tests := []struct {
		name    string
		fault   retryhttptest.Fault
		oneByte bool // read one byte at a time
		want    string
		err     error
		elapsed time.Duration
	}{
		{"truncate 0", retryhttptest.Truncate(0), false, "", io.ErrUnexpectedEOF, 0},
		{"truncate 5", retryhttptest.Truncate(5), false, "hello", io.ErrUnexpectedEOF, 0},
		{"truncate 5 bytewise", retryhttptest.Truncate(5), true, "hello", io.ErrUnexpectedEOF, 0},
		{"truncate 14", retryhttptest.Truncate(14), false, body, nil, 0},
		{"truncate 100", retryhttptest.Truncate(100), false, body, nil, 0},
		{"slow 4", retryhttptest.Slow(4, time.Second), false, body, nil, 3 * time.Second},
		{"slow 4 bytewise", retryhttptest.Slow(4, time.Second), true, body, nil, 3 * time.Second},
		{"slow 7", retryhttptest.Slow(7, time.Minute), false, body, nil, time.Minute},
		{"slow 14", retryhttptest.Slow(14, time.Hour), false, body, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tr := retryhttptest.NewTransport(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
					io.WriteString(w, body)
				}), tt.fault)
				req, _ := request(t, "GET", "http://svc.test/", "", 0)
				start := time.Now()
				resp, err := tr.RoundTrip(req)
				require.NoError(t, err)
				defer resp.Body.Close()
				assert.Equal(t, int64(len(body)), resp.ContentLength)
				var r io.Reader = resp.Body
				if tt.oneByte {
					r = iotest.OneByteReader(r)
				}
				got, err := io.ReadAll(r)
				assert.Equal(t, tt.want, string(got))
				if tt.err == nil {
					assert.NoError(t, err)
				} else {
					assert.ErrorIs(t, err, tt.err)
				}
				assert.Equal(t, tt.elapsed, time.Since(start))
				assert.Equal(t, 1, tr.Executions())
			})
		})
	}
}

func TestTransportClosesRequestBodyOnce(t *testing.T) {
	closer := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer r.Body.Close() // as many handlers do
		io.Copy(w, r.Body)
	})
	faults := map[string]retryhttptest.Fault{
		"Pass": retryhttptest.Pass(), "Status": retryhttptest.Status(503), "RetryAfter": retryhttptest.RetryAfter(429, time.Second),
		"Delay": retryhttptest.Delay(time.Second, retryhttptest.Pass()), "Hang": retryhttptest.Hang(),
		"Delay past the deadline": retryhttptest.Delay(time.Hour, retryhttptest.Pass()),
		"ResetAfterRead":          retryhttptest.ResetAfterRead(), "CloseBeforeRead": retryhttptest.CloseBeforeRead(),
		"Truncate": retryhttptest.Truncate(2), "Slow": retryhttptest.Slow(1, time.Second),
	}
	for name, fault := range faults {
		for hname, h := range map[string]http.Handler{"echo": echo, "default": nil, "closing": closer} {
			t.Run(name+"/"+hname, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					tr := retryhttptest.NewTransport(h, fault)
					req, body := request(t, "PUT", "http://svc.test/", "payload", time.Minute)
					resp, err := tr.RoundTrip(req)
					if err == nil {
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
					}
					assert.EqualValues(t, 1, body.closes.Load(), "request body closes")
				})
			})
		}
	}
}

func TestTransportTrace(t *testing.T) {
	tests := []struct {
		name  string
		fault retryhttptest.Fault
		want  []string
	}{
		{"Pass", retryhttptest.Pass(), []string{"GetConn svc.test:8080", "GotConn", "WroteHeaders", "WroteRequest"}},
		{"Status", retryhttptest.Status(503), []string{"GetConn svc.test:8080", "GotConn", "WroteHeaders", "WroteRequest"}},
		{"ResetAfterRead", retryhttptest.ResetAfterRead(), []string{"GetConn svc.test:8080", "GotConn", "WroteHeaders", "WroteRequest"}},
		{"CloseBeforeRead", retryhttptest.CloseBeforeRead(), []string{"GetConn svc.test:8080", "GotConn", "WroteHeaders"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			trace := &httptrace.ClientTrace{
				GetConn:      func(hostPort string) { got = append(got, "GetConn "+hostPort) },
				GotConn:      func(httptrace.GotConnInfo) { got = append(got, "GotConn") },
				WroteHeaders: func() { got = append(got, "WroteHeaders") },
				WroteRequest: func(httptrace.WroteRequestInfo) { got = append(got, "WroteRequest") },
			}
			req, _ := request(t, "GET", "http://svc.test:8080/", "", 0)
			req = req.WithContext(httptrace.WithClientTrace(req.Context(), trace))
			if resp, err := retryhttptest.NewTransport(nil, tt.fault).RoundTrip(req); err == nil {
				resp.Body.Close()
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestTransportServerSideRequest(t *testing.T) {
	var got *http.Request
	tr := retryhttptest.NewTransport(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r
		w.Header().Set("X-Seen", r.Header.Get("X-In"))
		w.WriteHeader(http.StatusCreated)
		io.Copy(w, r.Body)
	}), retryhttptest.Pass())
	req, _ := request(t, "POST", "http://user:pw@svc.test/p/a?q=1", "payload", 0)
	req.Header.Set("X-In", "v")

	resp, err := tr.RoundTrip(req)
	require.NoError(t, err)
	require.NotNil(t, got)
	assert.Equal(t, "/p/a?q=1", got.RequestURI)
	assert.Equal(t, "", got.URL.Scheme)
	assert.Equal(t, "", got.URL.Host)
	assert.Nil(t, got.URL.User)
	assert.Equal(t, "/p/a", got.URL.Path)
	assert.Equal(t, "svc.test", got.Host)
	assert.NotEmpty(t, got.RemoteAddr)
	assert.Equal(t, 1, got.ProtoMajor)

	assert.Equal(t, http.StatusCreated, resp.StatusCode)
	assert.Equal(t, "v", resp.Header.Get("X-Seen"))
	assert.Same(t, req, resp.Request)
	assert.Equal(t, "payload", readBody(t, resp))
	assert.Equal(t, "http://user:pw@svc.test/p/a?q=1", req.URL.String(), "the caller's request is unchanged")
	assert.Empty(t, req.RequestURI)
	assert.Equal(t, "POST /p/a?q=1", tr.Requests()[0].Key)
}

func TestTransportWithRetryhttp(t *testing.T) {
	t.Run("fail twice then succeed", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			tr := retryhttptest.NewTransport(nil, retryhttptest.First(2, retryhttptest.Status(503)))
			client := &http.Client{Transport: retryhttp.New(retryhttp.WithBase(tr), retryhttp.WithoutBudget())}
			resp, err := client.Get("http://svc.test/x")
			require.NoError(t, err)
			assert.Equal(t, 200, resp.StatusCode)
			assert.Equal(t, "ok\n", readBody(t, resp))
			assert.Equal(t, 3, retryhttp.Attempts(resp))
			r := tr.Request("GET /x")
			assert.Equal(t, []string{"503", "503", "pass"}, r.Outcomes)
			assert.Equal(t, 1, r.Executions)
		})
	})
	t.Run("key-less POST is not retried after the headers went out", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			tr := retryhttptest.NewTransport(nil, retryhttptest.CloseBeforeRead())
			req, body := request(t, "POST", "http://svc.test/pay", "amount=10", 0)
			_, err := retryhttp.New(retryhttp.WithBase(tr), retryhttp.WithoutBudget()).RoundTrip(req)
			assert.ErrorIs(t, err, io.EOF)
			assert.Equal(t, 1, tr.Attempts())
			assert.Zero(t, tr.Executions())
			assert.EqualValues(t, 1, body.closes.Load(), "request body closes")
		})
	})
	t.Run("Retry-After is honoured", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			tr := retryhttptest.NewTransport(nil, retryhttptest.Sequence(retryhttptest.RetryAfter(503, 30*time.Second)))
			client := &http.Client{Transport: retryhttp.New(retryhttp.WithBase(tr), retryhttp.WithoutBudget())}
			start := time.Now()
			resp, err := client.Get("http://svc.test/x")
			require.NoError(t, err)
			assert.Equal(t, 200, resp.StatusCode)
			readBody(t, resp)
			assert.GreaterOrEqual(t, time.Since(start), 30*time.Second)
			arrivals := tr.Arrivals()
			require.Len(t, arrivals, 2)
			assert.GreaterOrEqual(t, arrivals[1].Sub(arrivals[0]), 30*time.Second)
			assert.Equal(t, []string{"503 Retry-After: 30", "pass"}, tr.Request("GET /x").Outcomes)
		})
	})
}

func TestTransportRecordsAreCopies(t *testing.T) {
	tr := retryhttptest.NewTransport(nil, retryhttptest.First(1, retryhttptest.Status(503)))
	for range 2 {
		req, _ := request(t, "GET", "http://svc.test/x", "", 0)
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		readBody(t, resp)
	}
	want := tr.Request("GET /x")
	want.Arrivals = append([]time.Time(nil), want.Arrivals...)
	want.Outcomes = append([]string(nil), want.Outcomes...)

	reqs := tr.Requests()
	reqs[0].Outcomes[0], reqs[0].Arrivals[0], reqs[0].Attempts = "x", time.Time{}, 99
	r := tr.Request("GET /x")
	r.Outcomes[1], r.Arrivals[1] = "y", time.Time{}
	arrivals := tr.Arrivals()
	assert.Equal(t, want.Arrivals, arrivals)
	arrivals[0] = time.Time{}

	assert.Equal(t, want, tr.Request("GET /x"))
	assert.Equal(t, []retryhttptest.Request{want}, tr.Requests())
	assert.Equal(t, want.Arrivals, tr.Arrivals())
	assert.Equal(t, []string{"503", "pass"}, want.Outcomes)
	assert.Equal(t, 2, tr.Attempts())
	assert.Equal(t, 1, tr.Executions())
	assert.Equal(t, retryhttptest.Request{Key: "GET /never", SameBody: true}, tr.Request("GET /never"))
}
