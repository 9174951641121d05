package retryhttptest_test

import (
	"io"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp/retryhttptest"
)

func TestServerSameBody(t *testing.T) {
	tests := []struct {
		name   string
		bodies []string
		want   bool
	}{
		{"one attempt", []string{"a=1"}, true},
		{"identical", []string{"a=1", "a=1", "a=1"}, true},
		{"different", []string{"a=1", "a=2"}, false},
		{"different later", []string{"a=1", "a=1", "a=2"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The first attempt is answered without the handler, the rest by
			// a handler that does not read the body: all are digested.
			srv := retryhttptest.NewServer(nil, retryhttptest.First(1, retryhttptest.Status(503)))
			defer srv.Close()
			for _, b := range tt.bodies {
				resp, err := send(t, srv.Client(), "POST", srv.URL, b, "Idempotency-Key", "k")
				require.NoError(t, err)
				readBody(t, resp)
			}
			r := srv.Request("k")
			assert.Equal(t, len(tt.bodies), r.Attempts)
			assert.Equal(t, tt.want, r.SameBody)
		})
	}
}

func TestServerConnections(t *testing.T) {
	for keepAlive, want := range map[bool]int{true: 1, false: 2} {
		t.Run("keep-alive "+strconv.FormatBool(keepAlive), func(t *testing.T) {
			srv := retryhttptest.NewServer(nil, retryhttptest.Pass())
			defer srv.Close()
			tr := &http.Transport{DisableKeepAlives: !keepAlive}
			defer tr.CloseIdleConnections()
			for range 2 {
				resp, err := (&http.Client{Transport: tr}).Get(srv.URL)
				require.NoError(t, err)
				readBody(t, resp)
			}
			assert.Equal(t, want, srv.Connections())
			assert.Equal(t, 2, srv.Attempts())
		})
	}
}

func TestServerExecutionRecordedBeforeResponse(t *testing.T) {
	release := make(chan struct{})
	srv := retryhttptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Write(make([]byte, 64<<10)) // more than net/http buffers: the headers go out
		<-release
	}), retryhttptest.Pass())
	defer srv.Close()
	defer close(release)

	resp, err := srv.Client().Get(srv.URL)
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, 1, srv.Executions(), "the client has the handler's response")
	assert.Equal(t, 1, srv.Request("GET /").Executions)
}

func TestServerRecordsConcurrent(t *testing.T) {
	srv := retryhttptest.NewServer(nil, retryhttptest.First(1, retryhttptest.Status(503)), retryhttptest.KeyHeader("X-Request-Id"))
	defer srv.Close()
	stop := make(chan struct{})
	var reader sync.WaitGroup
	reader.Go(func() {
		for conns := 0; ; conns = srv.Connections() {
			select {
			case <-stop:
				return
			default:
			}
			before, sum := srv.Attempts(), 0
			for _, r := range srv.Requests() {
				sum += r.Attempts
				if !assert.Len(t, r.Arrivals, r.Attempts) || !assert.Len(t, r.Outcomes, r.Attempts) ||
					!assert.LessOrEqual(t, r.Executions, r.Attempts) ||
					!assert.Equal(t, "503", r.Outcomes[0]) ||
					(r.Attempts > 1 && !assert.Equal(t, "pass", r.Outcomes[1])) {
					return
				}
				r.Outcomes[0], r.Arrivals[0] = "mutated", time.Time{}
			}
			after := srv.Attempts()
			if !assert.True(t, before <= sum && sum <= after, "%d <= %d <= %d", before, sum, after) ||
				!assert.GreaterOrEqual(t, len(srv.Arrivals()), after) ||
				!assert.LessOrEqual(t, srv.Executions(), srv.Attempts()) ||
				!assert.GreaterOrEqual(t, srv.Connections(), conns) {
				return
			}
			srv.Request("id-0")
			if a := srv.Arrivals(); len(a) > 0 {
				a[0] = time.Time{}
			}
		}
	})

	const n = 30
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			for range 2 {
				resp, err := send(t, srv.Client(), "GET", srv.URL, "", "X-Request-Id", "id-"+strconv.Itoa(i))
				if assert.NoError(t, err) {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	reader.Wait()

	assert.Equal(t, 2*n, srv.Attempts())
	assert.Equal(t, n, srv.Executions())
	for _, r := range srv.Requests() {
		assert.Equal(t, []string{"503", "pass"}, r.Outcomes, "the reader's changes must not show")
		assert.False(t, r.Arrivals[0].IsZero())
	}
	assert.False(t, srv.Arrivals()[0].IsZero(), "the reader's changes must not show")
}
