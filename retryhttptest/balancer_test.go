package retryhttptest_test

import (
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/retryhttp/retryhttp/retryhttptest"
)

// TestBalancerPinsEachConnection proves that every request sent down one
// connection reaches the same backend, that new connections are spread over
// the backends, and that the counts say where each went.
func TestBalancerPinsEachConnection(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	a := retryhttptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "a") }), retryhttptest.Pass())
	defer a.Close()
	b := retryhttptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "b") }), retryhttptest.Pass())
	defer b.Close()
	lb := retryhttptest.NewBalancer(1, a.URL, b.URL)
	defer lb.Close()

	seen := map[string]int{}
	for range 20 {
		// One connection at most: a request waits for the one before to
		// hand its connection back rather than dialling another.
		tr := &http.Transport{MaxConnsPerHost: 1}
		var first string
		for i := range 5 {
			resp, err := tr.RoundTrip(mustGet(t, lb.URL))
			require.NoError(t, err)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if i == 0 {
				first = string(body)
			}
			assert.Equal(t, first, string(body), "requests down one connection reach one backend")
		}
		seen[first]++
		tr.CloseIdleConnections()
	}
	assert.Equal(t, 20, lb.TotalConnections())
	assert.Equal(t, seen["a"], lb.Connections(0))
	assert.Equal(t, seen["b"], lb.Connections(1))
	assert.Positive(t, seen["a"], "connections piped to a")
	assert.Positive(t, seen["b"], "connections piped to b")
	assert.Equal(t, 20*5, a.Attempts()+b.Attempts())
}

// TestBalancerSeedRepeats proves that the same seed picks the same
// backends in the same order.
func TestBalancerSeedRepeats(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	picks := func() []int {
		var backends []string
		var servers []*retryhttptest.Server
		for range 3 {
			s := retryhttptest.NewServer(nil, retryhttptest.Pass())
			defer s.Close()
			servers = append(servers, s)
			backends = append(backends, s.URL)
		}
		lb := retryhttptest.NewBalancer(42, backends...)
		defer lb.Close()
		var got []int
		for range 12 {
			tr := &http.Transport{DisableKeepAlives: true}
			resp, err := tr.RoundTrip(mustGet(t, lb.URL))
			require.NoError(t, err)
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			for i, s := range servers {
				if s.Attempts() > count(got, i) {
					got = append(got, i)
				}
			}
		}
		return got
	}
	first := picks()
	assert.Len(t, first, 12)
	assert.Equal(t, first, picks())
}

// count returns how many times v occurs in s.
func count(s []int, v int) int {
	n := 0
	for _, x := range s {
		if x == v {
			n++
		}
	}
	return n
}

// TestBalancerUnreachableBackendClosesTheConnection proves that a client
// whose connection was piped to a backend that cannot be reached sees its
// connection closed, not a hang.
func TestBalancerUnreachableBackendClosesTheConnection(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	gone := retryhttptest.NewServer(nil, retryhttptest.Pass())
	url := gone.URL
	gone.Close()
	lb := retryhttptest.NewBalancer(1, url)
	defer lb.Close()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	_, err := tr.RoundTrip(mustGet(t, lb.URL))
	require.Error(t, err)
	assert.Equal(t, 1, lb.Connections(0))
}

// mustGet returns a GET of url.
func mustGet(t *testing.T, url string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	return req
}

func TestNewBalancerPanicsWithoutBackends(t *testing.T) {
	assert.PanicsWithValue(t, "retryhttptest: NewBalancer: no backend", func() { retryhttptest.NewBalancer(1) })
}
