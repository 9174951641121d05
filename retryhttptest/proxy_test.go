package retryhttptest_test

import (
	"io"
	"net/http"
	stdhttptest "net/http/httptest"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/backoff"
	"github.com/retryhttp/retryhttp/hedge"
	"github.com/retryhttp/retryhttp/retryhttptest"
)

// upstream is a real server behind a proxy: it records what reached it and
// answers 201 with headers of its own and the body it read.
type upstream struct {
	*stdhttptest.Server
	mu       sync.Mutex
	requests []*http.Request
	bodies   []string
}

func newUpstream(t *testing.T) *upstream {
	u := &upstream{}
	u.Server = stdhttptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		u.requests = append(u.requests, r)
		u.bodies = append(u.bodies, string(b))
		u.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.Header().Set("X-Amz-Crc32", "2745614147")
		w.WriteHeader(http.StatusCreated)
		w.Write(b)
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *upstream) count() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.requests)
}

// TestProxyForwardsAsSent checks that a request reaches the upstream as
// the client sent it, Host and path prefix included, and that its answer
// reaches the client as the upstream sent it.
func TestProxyForwardsAsSent(t *testing.T) {
	up := newUpstream(t)
	p := retryhttptest.NewProxy(up.URL+"/base", retryhttptest.Pass())
	defer p.Close()

	req, err := http.NewRequest(http.MethodPost, p.URL+"/table/items?consistent=true", nil)
	require.NoError(t, err)
	req.Body = io.NopCloser(stringsReader(`{"TableName":"orders"}`))
	req.ContentLength = int64(len(`{"TableName":"orders"}`))
	req.Host = "dynamodb.eu-west-1.amazonaws.com"
	req.Header.Set("X-Amz-Target", "DynamoDB_20120810.GetItem")
	req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=AKID/20261124/eu-west-1/dynamodb/aws4_request, SignedHeaders=host;x-amz-target, Signature=abc")
	resp, err := p.Client().Do(req)
	require.NoError(t, err)
	assert.Equal(t, http.StatusCreated, resp.StatusCode)
	assert.Equal(t, "2745614147", resp.Header.Get("X-Amz-Crc32"))
	assert.Equal(t, "application/x-amz-json-1.0", resp.Header.Get("Content-Type"))
	assert.Equal(t, `{"TableName":"orders"}`, readBody(t, resp))

	require.Equal(t, 1, up.count())
	got := up.requests[0]
	assert.Equal(t, http.MethodPost, got.Method)
	assert.Equal(t, "/base/table/items?consistent=true", got.RequestURI)
	assert.Equal(t, "dynamodb.eu-west-1.amazonaws.com", got.Host, "the Host the client signed")
	assert.Equal(t, "DynamoDB_20120810.GetItem", got.Header.Get("X-Amz-Target"))
	assert.Equal(t, req.Header.Get("Authorization"), got.Header.Get("Authorization"))
	assert.Empty(t, got.Header.Get("X-Forwarded-For"), "a transparent proxy adds nothing")
	assert.Equal(t, `{"TableName":"orders"}`, up.bodies[0])

	rec := p.Request("POST /table/items?consistent=true")
	assert.Equal(t, 1, rec.Attempts)
	assert.Equal(t, 1, rec.Executions)
	assert.Equal(t, []string{"pass"}, rec.Outcomes)
	assert.Equal(t, 1, p.Connections())
}

func TestProxyFaults(t *testing.T) {
	tests := []struct {
		name       string
		fault      retryhttptest.Fault
		status     int    // 0: an error
		errIs      error  // with status 0, when the error is known
		body       string // with a status
		reached    int    // requests that reached the upstream
		executions int
	}{
		{"pass", retryhttptest.Pass(), 201, nil, "amount=10", 1, 1},
		{"canned 503", retryhttptest.Status(503), 503, nil, "Service Unavailable\n", 0, 0},
		{"Retry-After", retryhttptest.RetryAfter(429, 2*time.Second), 429, nil, "Too Many Requests\n", 0, 0},
		{"reset after the upstream answered", retryhttptest.ResetAfterRead(), 0, syscall.ECONNRESET, "", 1, 1},
		{"closed before the body", retryhttptest.CloseBeforeRead(), 0, nil, "", 0, 0},
		{"truncated", retryhttptest.Truncate(3), 201, io.ErrUnexpectedEOF, "amo", 1, 1},
		{"slow", retryhttptest.Slow(2, time.Millisecond), 201, nil, "amount=10", 1, 1},
		{"delayed", retryhttptest.Delay(10*time.Millisecond, retryhttptest.Pass()), 201, nil, "amount=10", 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := newUpstream(t)
			p := retryhttptest.NewProxy(up.URL, tt.fault)
			defer p.Close()

			resp, err := send(t, p.Client(), http.MethodPost, p.URL+"/pay", "amount=10")
			if tt.status == 0 {
				require.Error(t, err)
				if tt.errIs != nil {
					assert.ErrorIs(t, err, tt.errIs)
				}
			} else {
				require.NoError(t, err)
				assert.Equal(t, tt.status, resp.StatusCode)
				b, rerr := io.ReadAll(resp.Body)
				resp.Body.Close()
				assert.Equal(t, tt.body, string(b))
				if tt.errIs != nil {
					assert.ErrorIs(t, rerr, tt.errIs)
				}
			}
			assert.Equal(t, tt.reached, up.count(), "requests that reached the upstream")
			assert.Equal(t, 1, p.Attempts())
			assert.Equal(t, tt.executions, p.Executions())
			if tt.reached > 0 {
				assert.Equal(t, "amount=10", up.bodies[0])
			}
		})
	}
}

// TestProxyUpstreamDown checks that an upstream that cannot be reached
// gives a 502, and that the attempt is not counted as executed.
func TestProxyUpstreamDown(t *testing.T) {
	up := newUpstream(t)
	addr := up.URL
	up.Close()
	p := retryhttptest.NewProxy(addr, retryhttptest.ResetAfterRead())
	defer p.Close()
	_, err := p.Client().Get(p.URL)
	require.Error(t, err, "the reset applies whatever the upstream said")

	p2 := retryhttptest.NewProxy(addr, retryhttptest.Pass())
	defer p2.Close()
	resp, err := p2.Client().Get(p2.URL)
	require.NoError(t, err)
	assert.Equal(t, http.StatusBadGateway, resp.StatusCode)
	resp.Body.Close()
	assert.Zero(t, p.Executions()+p2.Executions())
	assert.Equal(t, 2, p.Attempts()+p2.Attempts())
}

// TestProxyStreams checks that the upstream's body is passed on as it
// comes: the client reads the first part before the upstream sends the
// rest.
func TestProxyStreams(t *testing.T) {
	rest := make(chan struct{})
	up := stdhttptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "data: first\n\n")
		http.NewResponseController(w).Flush()
		<-rest
		io.WriteString(w, "data: second\n\n")
	}))
	defer up.Close()
	p := retryhttptest.NewProxy(up.URL, retryhttptest.Pass())
	defer p.Close()

	resp, err := p.Client().Get(p.URL + "/events")
	require.NoError(t, err)
	defer resp.Body.Close()
	first := make([]byte, len("data: first\n\n"))
	_, err = io.ReadFull(resp.Body, first)
	require.NoError(t, err)
	assert.Equal(t, "data: first\n\n", string(first))
	close(rest)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Equal(t, "data: second\n\n", string(b))
}

func TestProxyCloseEndsHang(t *testing.T) {
	up := newUpstream(t)
	arrived := make(chan struct{}, 1)
	p := retryhttptest.NewProxy(up.URL, retryhttptest.Hang(), retryhttptest.KeyFunc(func(*http.Request) string {
		arrived <- struct{}{}
		return "k"
	}))
	errc := make(chan error, 1)
	go func() {
		_, err := p.Client().Get(p.URL)
		errc <- err
	}()
	<-arrived
	p.Close()
	assert.Error(t, <-errc)
	assert.Equal(t, []string{"hang"}, p.Request("k").Outcomes)
	assert.Zero(t, up.count())
}

// TestProxyUnderRetries checks the records a retrying client leaves: the
// attempts of one logical request, the answers the proxy made up, and the
// one execution the upstream counted.
func TestProxyUnderRetries(t *testing.T) {
	up := newUpstream(t)
	p := retryhttptest.NewProxy(up.URL, retryhttptest.Sequence(retryhttptest.Status(503), retryhttptest.ResetAfterRead()))
	defer p.Close()
	client := &http.Client{Transport: retryhttp.New(retryhttp.WithBackoff(backoff.Constant(time.Millisecond)))}

	resp, err := send(t, client, http.MethodPut, p.URL+"/objects/1", "v1", "Idempotency-Key", "put-1")
	require.NoError(t, err)
	assert.Equal(t, http.StatusCreated, resp.StatusCode)
	assert.Equal(t, "v1", readBody(t, resp))
	rec := p.Request("put-1")
	assert.Equal(t, 3, rec.Attempts)
	assert.Equal(t, 2, rec.Executions, "the reset came after the upstream answered")
	assert.Equal(t, []string{"503", "reset", "pass"}, rec.Outcomes)
	assert.True(t, rec.SameBody)
	assert.Equal(t, 2, up.count())
}

func TestNewProxyRejectsBadUpstream(t *testing.T) {
	for _, u := range []string{"", "127.0.0.1:80", "ftp://example.test/", "http://", "http://[::1"} {
		assert.Panics(t, func() { retryhttptest.NewProxy(u, retryhttptest.Pass()) }, "%q", u)
	}
}

func stringsReader(s string) io.Reader { return &stringReader{s: s} }

// stringReader is a reader without a known length, so that the request
// is sent as the test sets it.
type stringReader struct{ s string }

func (r *stringReader) Read(p []byte) (int, error) {
	if r.s == "" {
		return 0, io.EOF
	}
	n := copy(p, r.s)
	r.s = r.s[n:]
	return n, nil
}

// TestRecordsTellHedgesFromRetries checks that an attempt arriving while
// another of its request is still being served, as a hedge does, is
// counted as overlapping, and a retry, which comes after, is not.
func TestRecordsTellHedgesFromRetries(t *testing.T) {
	srv := retryhttptest.NewServer(nil, retryhttptest.Func(func(key string, attempt int) retryhttptest.Fault {
		switch {
		case key == "hedged" && attempt == 1:
			// Whichever attempt arrives first hangs until the other has
			// answered and the client cancels it: the other overlaps it
			// however late either arrives.
			return retryhttptest.Hang()
		case key == "retried" && attempt == 1:
			return retryhttptest.Status(503)
		}
		return retryhttptest.Pass()
	}))
	defer srv.Close()
	// Two attempts: one hedge, however long its answer takes.
	client := &http.Client{Transport: retryhttp.New(
		retryhttp.WithMaxAttempts(2),
		retryhttp.WithHedging(hedge.Delay(20*time.Millisecond)),
		retryhttp.WithBackoff(backoff.Constant(time.Millisecond)))}
	for _, key := range []string{"hedged", "retried"} {
		req, err := http.NewRequest(http.MethodGet, srv.URL, nil)
		require.NoError(t, err)
		req.Header.Set("Idempotency-Key", key)
		if key == "retried" {
			// Retried only: a 503 slower than the hedge delay must not
			// bring a hedge instead.
			req = req.WithContext(retryhttp.NoHedge(req.Context()))
		}
		resp, err := client.Do(req)
		require.NoError(t, err)
		assert.Equal(t, "ok\n", readBody(t, resp), key)
	}
	h, r := srv.Request("hedged"), srv.Request("retried")
	assert.Equal(t, 2, h.Attempts)
	assert.Equal(t, 1, h.Overlapping, "the hedge arrived while the first attempt was served")
	assert.Equal(t, 2, r.Attempts)
	assert.Equal(t, 0, r.Overlapping, "the retry came after the first attempt ended")
}
