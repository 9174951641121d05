package retryhttp

import (
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/retryhttp/retryhttp/backoff"
	"github.com/retryhttp/retryhttp/budget"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPerHostDeadHostUnderChurnThroughATransport is the churn of the
// shapes above through a Transport: a dead host answering 503 to every
// attempt, and between two of its requests 200 new hosts answering 504,
// with a table of 16 hosts. The dead host gets at most its 2 retries a
// request, and at least the 100 its bucket pays for.
func TestPerHostDeadHostUnderChurnThroughATransport(t *testing.T) {
	var dead atomic.Int64
	base := rtFunc(func(r *http.Request) (*http.Response, error) {
		code := http.StatusGatewayTimeout
		if r.URL.Host == "dead.test" {
			dead.Add(1)
			code = http.StatusServiceUnavailable
		}
		return &http.Response{StatusCode: code, Header: http.Header{}, Body: http.NoBody, Request: r}, nil
	})
	tr := New(WithBase(base), WithBackoff(backoff.Constant(0)), WithBudget(budget.NewPerHost(budget.MaxHosts(16))))
	const rounds = 120
	for i := range rounds * 201 {
		url := "http://dead.test/"
		if i%201 > 0 {
			url = "http://c" + strconv.Itoa(i) + ".test/"
		}
		resp, err := tr.RoundTrip(get(t, url))
		require.NoError(t, err)
		resp.Body.Close()
	}
	retries := dead.Load() - rounds
	t.Logf("the dead host's retries: %d over %d requests", retries, rounds)
	assert.GreaterOrEqual(t, retries, int64(100))
	assert.LessOrEqual(t, retries, int64(2*rounds))
}
