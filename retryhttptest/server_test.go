package retryhttptest_test

import (
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp/retryhttptest"
)

type starter func(http.Handler, retryhttptest.Fault, ...retryhttptest.Option) *retryhttptest.Server

// startWatched starts s after hooking its connection states, and returns a
// channel that receives once for every connection the server closes, which
// it does only after the connection's handler has returned.
func startWatched(s *retryhttptest.Server) <-chan struct{} {
	closed := make(chan struct{}, 16)
	prev := s.Config.ConnState
	s.Config.ConnState = func(c net.Conn, state http.ConnState) {
		prev(c, state)
		if state == http.StateClosed {
			closed <- struct{}{}
		}
	}
	s.Start()
	return closed
}

// echo answers with the request body it read.
var echo = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	w.Write(b)
})

func send(t *testing.T, c *http.Client, method, url, body string, header ...string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return c.Do(req)
}

func readBody(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}

func TestServerCannedResponses(t *testing.T) {
	date := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name       string
		fault      retryhttptest.Fault
		code       int
		header     http.Header
		body       string
		outcome    string
		executions int
	}{
		{"Pass", retryhttptest.Pass(), 200, nil, "request body", "pass", 1},
		{"Delay", retryhttptest.Delay(time.Millisecond, retryhttptest.Pass()), 200, nil, "request body", "delay 1ms, pass", 1},
		{"Status", retryhttptest.Status(503), 503, http.Header{"Content-Type": {"text/plain; charset=utf-8"}}, "Service Unavailable\n", "503", 0},
		{"RetryAfter", retryhttptest.RetryAfter(429, 1500*time.Millisecond), 429, http.Header{"Retry-After": {"2"}}, "Too Many Requests\n", "429 Retry-After: 2", 0},
		{"RetryAfterDate", retryhttptest.RetryAfterDate(503, date), 503, http.Header{"Retry-After": {"Wed, 02 Jan 2030 03:04:05 GMT"}}, "Service Unavailable\n", "503 Retry-After: Wed, 02 Jan 2030 03:04:05 GMT", 0},
		{"Respond", retryhttptest.Respond(418, http.Header{"X-Tea": {"green"}, "Content-Type": {"application/json"}}, `{"tea":true}`), 418, http.Header{"X-Tea": {"green"}, "Content-Type": {"application/json"}}, `{"tea":true}`, "418", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := retryhttptest.NewServer(echo, tt.fault)
			defer srv.Close()
			resp, err := send(t, srv.Client(), "POST", srv.URL+"/x", "request body")
			require.NoError(t, err)
			assert.Equal(t, tt.code, resp.StatusCode)
			for k := range tt.header {
				assert.Equal(t, tt.header.Get(k), resp.Header.Get(k), "header %s", k)
			}
			assert.Equal(t, tt.body, readBody(t, resp))
			assert.Equal(t, int64(len(tt.body)), resp.ContentLength)
			assert.Equal(t, tt.executions, srv.Executions())
			assert.Equal(t, []string{tt.outcome}, srv.Request("POST /x").Outcomes)
		})
	}
}

// A delayed request's body is read ahead only up to a limit; the handler
// still gets all of it, in order.
func TestServerDelayedLargeBody(t *testing.T) {
	srv := retryhttptest.NewServer(echo, retryhttptest.Delay(time.Millisecond, retryhttptest.Pass()))
	defer srv.Close()
	body := strings.Repeat("0123456789abcdef", (3<<20)/16+1) // past the 1 MiB read ahead
	resp, err := send(t, srv.Client(), "POST", srv.URL+"/big", body, "Idempotency-Key", "big")
	require.NoError(t, err)
	got := readBody(t, resp)
	assert.Equal(t, len(body), len(got))
	assert.True(t, got == body, "the handler read the body out of order")
	r := srv.Request("big")
	assert.Equal(t, 1, r.Executions)
	assert.True(t, r.SameBody)
}

func TestServerFailTwiceThenSucceed(t *testing.T) {
	srv := retryhttptest.NewServer(nil, retryhttptest.First(2, retryhttptest.Status(503)), retryhttptest.KeyHeader("X-Request-Id"))
	defer srv.Close()
	const n = 20
	codes := make([][]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			for len(codes[i]) < 5 {
				resp, err := send(t, srv.Client(), "GET", srv.URL+"/same", "", "X-Request-Id", "id-"+strconv.Itoa(i))
				if !assert.NoError(t, err) {
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if codes[i] = append(codes[i], resp.StatusCode); resp.StatusCode == 200 {
					return
				}
			}
		})
	}
	wg.Wait()
	for i := range n {
		assert.Equal(t, []int{503, 503, 200}, codes[i], "request %d", i)
		r := srv.Request("id-" + strconv.Itoa(i))
		assert.Equal(t, 3, r.Attempts, "request %d attempts", i)
		assert.Equal(t, 1, r.Executions, "request %d executions", i)
		assert.Equal(t, []string{"503", "503", "pass"}, r.Outcomes, "request %d", i)
	}
	assert.Len(t, srv.Requests(), n)
	assert.Equal(t, 3*n, srv.Attempts())
	assert.Equal(t, n, srv.Executions())
}

func TestServerKeys(t *testing.T) {
	byHeader := []retryhttptest.Option{retryhttptest.KeyHeader("X-Request-Id")}
	tests := []struct {
		name         string
		opts         []retryhttptest.Option
		method, path string
		header       []string
		want         string
	}{
		{"Idempotency-Key", nil, "POST", "/orders", []string{"Idempotency-Key", "k-1"}, "k-1"},
		{"no key", nil, "GET", "/a/b?q=1", nil, "GET /a/b?q=1"},
		{"no key POST", nil, "POST", "/orders", nil, "POST /orders"},
		{"other header ignored by default", nil, "PUT", "/x", []string{"X-Request-Id", "r-1"}, "PUT /x"},
		{"KeyHeader", byHeader, "GET", "/x", []string{"X-Request-Id", "r-1", "Idempotency-Key", "k-1"}, "r-1"},
		{"KeyHeader missing", byHeader, "GET", "/x", []string{"Idempotency-Key", "k-1"}, "GET /x"},
		{"KeyFunc", []retryhttptest.Option{retryhttptest.KeyFunc(func(r *http.Request) string { return r.URL.Query().Get("id") })}, "GET", "/x?id=7", nil, "7"},
		{"KeyFunc empty", []retryhttptest.Option{retryhttptest.KeyFunc(func(*http.Request) string { return "" })}, "DELETE", "/x?id=7", nil, "DELETE /x?id=7"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := retryhttptest.NewServer(nil, retryhttptest.Pass(), tt.opts...)
			defer srv.Close()
			for range 2 {
				resp, err := send(t, srv.Client(), tt.method, srv.URL+tt.path, "", tt.header...)
				require.NoError(t, err)
				readBody(t, resp)
			}
			reqs := srv.Requests()
			require.Len(t, reqs, 1, "both attempts are one logical request")
			assert.Equal(t, tt.want, reqs[0].Key)
			assert.Equal(t, 2, srv.Request(tt.want).Attempts)
		})
	}
}

func TestServerClientGivesUp(t *testing.T) {
	// Were the server to outlast the client, a Delay's handler would run
	// after 5s (Executions 1), and a Hang would end only at Close.
	tests := []struct {
		name, method, body string
		fault              retryhttptest.Fault
		outcome            string
	}{
		{"Hang", "GET", "", retryhttptest.Hang(), "hang"},
		{"Hang POST", "POST", "some body", retryhttptest.Hang(), "hang"},
		{"Delay", "GET", "", retryhttptest.Delay(5*time.Second, retryhttptest.Pass()), "delay 5s, pass"},
		{"Delay POST", "POST", "some body", retryhttptest.Delay(5*time.Second, retryhttptest.Pass()), "delay 5s, pass"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := retryhttptest.NewUnstartedServer(echo, tt.fault)
			closed := startWatched(srv)
			defer srv.Close()
			c := srv.Client()
			c.Timeout = 50 * time.Millisecond

			start := time.Now()
			_, err := send(t, c, tt.method, srv.URL+"/slow", tt.body)
			var ne net.Error
			require.ErrorAs(t, err, &ne)
			assert.True(t, ne.Timeout(), "error %v", err)
			assert.GreaterOrEqual(t, time.Since(start), c.Timeout)

			<-closed // the handler returned, without Close
			r := srv.Request(tt.method + " /slow")
			assert.Equal(t, 1, r.Attempts)
			assert.Zero(t, r.Executions, "the handler ran after the client gave up")
			assert.Equal(t, []string{tt.outcome}, r.Outcomes)
		})
	}
}

func TestServerCloseEndsHang(t *testing.T) {
	for name, start := range map[string]starter{"HTTP/1.1": retryhttptest.NewServer, "HTTP/2": retryhttptest.NewHTTP2Server} {
		t.Run(name, func(t *testing.T) {
			arrived := make(chan struct{}, 1)
			srv := start(nil, retryhttptest.Hang(), retryhttptest.KeyFunc(func(*http.Request) string {
				arrived <- struct{}{}
				return "k"
			}))
			errc := make(chan error, 1)
			go func() {
				_, err := srv.Client().Get(srv.URL) // a response would fail the test
				errc <- err
			}()
			<-arrived
			srv.Close() // must end the hang and return
			assert.Error(t, <-errc)
			assert.Equal(t, []string{"hang"}, srv.Request("k").Outcomes)
			assert.Zero(t, srv.Executions())
		})
	}
}

func TestServerAborts(t *testing.T) {
	tests := []struct {
		name       string
		start      starter
		fault      retryhttptest.Fault
		method     string
		errIs      error
		executions int
	}{
		{"reset HTTP/1.1", retryhttptest.NewServer, retryhttptest.ResetAfterRead(), "POST", syscall.ECONNRESET, 1},
		{"reset HTTP/2", retryhttptest.NewHTTP2Server, retryhttptest.ResetAfterRead(), "POST", nil, 1}, // the stream is reset
		{"close GET", retryhttptest.NewServer, retryhttptest.CloseBeforeRead(), "GET", nil, 0},
		{"close POST", retryhttptest.NewServer, retryhttptest.CloseBeforeRead(), "POST", nil, 0},
		{"close HTTP/2", retryhttptest.NewHTTP2Server, retryhttptest.CloseBeforeRead(), "POST", nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seen := make(chan string, 1)
			srv := tt.start(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				seen <- string(b)
				io.WriteString(w, "never sent")
			}), tt.fault)
			defer srv.Close()

			_, err := send(t, srv.Client(), tt.method, srv.URL+"/pay", "amount=10")
			require.Error(t, err)
			if tt.errIs != nil {
				assert.ErrorIs(t, err, tt.errIs)
			}
			assert.Equal(t, tt.executions, srv.Executions())
			assert.Equal(t, 1, srv.Attempts())
			if tt.executions > 0 {
				assert.Equal(t, "amount=10", <-seen, "the handler saw the whole body")
			}
			assert.Len(t, seen, 0)
		})
	}
}

func TestServerResponseBody(t *testing.T) {
	const body = "hello, world!!" // 14 bytes
	const every = 20 * time.Millisecond
	tests := []struct {
		name    string
		fault   retryhttptest.Fault
		want    string
		err     error
		elapsed time.Duration
	}{
		{"truncate 0", retryhttptest.Truncate(0), "", io.ErrUnexpectedEOF, 0},
		{"truncate 5", retryhttptest.Truncate(5), "hello", io.ErrUnexpectedEOF, 0},
		{"truncate 13", retryhttptest.Truncate(13), body[:13], io.ErrUnexpectedEOF, 0},
		{"truncate 14", retryhttptest.Truncate(14), body, nil, 0},
		{"truncate 100", retryhttptest.Truncate(100), body, nil, 0},
		{"slow 4/20ms", retryhttptest.Slow(4, every), body, nil, 3 * every}, // 4 chunks
		{"slow 7/20ms", retryhttptest.Slow(7, every), body, nil, every},     // 2 chunks
		{"slow 100/1h0m0s", retryhttptest.Slow(100, time.Hour), body, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := retryhttptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				io.WriteString(w, body)
			}), tt.fault)
			defer srv.Close()
			start := time.Now()
			resp, err := srv.Client().Get(srv.URL)
			require.NoError(t, err)
			defer resp.Body.Close()
			assert.Equal(t, int64(len(body)), resp.ContentLength)
			got, err := io.ReadAll(resp.Body)
			assert.Equal(t, tt.want, string(got))
			if tt.err == nil {
				assert.NoError(t, err)
			} else {
				assert.ErrorIs(t, err, tt.err)
			}
			assert.GreaterOrEqual(t, time.Since(start), tt.elapsed)
			assert.Equal(t, 1, srv.Executions())
			assert.Equal(t, []string{tt.name}, srv.Request("GET /").Outcomes)
		})
	}
}

func TestServerTLS(t *testing.T) {
	unstarted := func(h http.Handler, f retryhttptest.Fault, opts ...retryhttptest.Option) *retryhttptest.Server {
		srv := retryhttptest.NewUnstartedServer(h, f, opts...)
		assert.Empty(t, srv.URL, "not started")
		srv.EnableHTTP2 = true
		srv.StartTLS()
		return srv
	}
	tests := []struct {
		name  string
		start starter
		proto int
	}{
		{"NewTLSServer", retryhttptest.NewTLSServer, 1},
		{"NewHTTP2Server", retryhttptest.NewHTTP2Server, 2},
		{"NewUnstartedServer then StartTLS", unstarted, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := tt.start(echo, retryhttptest.First(1, retryhttptest.Status(503)))
			defer srv.Close()
			for _, want := range []int{503, 200} {
				resp, err := send(t, srv.Client(), "PUT", srv.URL+"/doc", "v1", "Idempotency-Key", "k")
				require.NoError(t, err)
				assert.Equal(t, want, resp.StatusCode)
				assert.Equal(t, tt.proto, resp.ProtoMajor)
				assert.NotNil(t, resp.TLS)
				readBody(t, resp)
			}
			r := srv.Request("k")
			assert.Equal(t, []string{"503", "pass"}, r.Outcomes)
			assert.Equal(t, 1, r.Executions)
			assert.True(t, r.SameBody)
			assert.Equal(t, 1, srv.Connections())
		})
	}
	// Close is safe on a server that never started.
	retryhttptest.NewUnstartedServer(nil, retryhttptest.Pass()).Close()
}
