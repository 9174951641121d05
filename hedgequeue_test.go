package retryhttp

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp/hedge"
	"github.com/retryhttp/retryhttp/internal/attempt"
)

// TestHedgeQueueHedgesEachCallOnTime checks the host's queue of calls
// waiting for their first hedge: of 60 calls started 1 ms apart, the
// tenth whose first attempt is slow are each hedged once, exactly their delay
// after they started, and those answered before it never, whether their
// neighbours left the queue first or not.
func TestHedgeQueueHedgesEachCallOnTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		hedgedAt := map[string][]time.Duration{}
		start := time.Now()
		base := rtFunc(func(r *http.Request) (*http.Response, error) {
			slow := r.URL.Query().Get("slow") == "1"
			if attempt.Number(r.Context()) > 1 {
				mu.Lock()
				hedgedAt[r.URL.RawQuery] = append(hedgedAt[r.URL.RawQuery], time.Since(start))
				mu.Unlock()
				slow = false
			}
			d := time.Millisecond
			if slow {
				d = time.Second
			}
			select {
			case <-time.After(d):
				return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: http.NoBody, Request: r}, nil
			case <-r.Context().Done():
				return nil, r.Context().Err()
			}
		})
		tr := New(WithBase(base), WithoutBudget(), WithMaxAttempts(2),
			WithHedging(hedge.Delay(20*time.Millisecond), hedge.MaxFraction(1)))
		var wg sync.WaitGroup
		started := map[string]time.Duration{}
		for i := range 60 {
			q := fmt.Sprintf("i=%d&slow=%d", i, i%10/9)
			started[q] = time.Since(start)
			wg.Go(func() {
				req, _ := http.NewRequest(http.MethodGet, "http://svc.test/?"+q, nil)
				resp, err := tr.RoundTrip(req)
				if assert.NoError(t, err) {
					resp.Body.Close()
				}
			})
			time.Sleep(time.Millisecond)
		}
		wg.Wait()
		for q, at := range started {
			hedges := hedgedAt[q]
			if q[len(q)-1] == '1' {
				require.Len(t, hedges, 1, "hedges of the slow call %s", q)
				assert.Equal(t, at+20*time.Millisecond, hedges[0], "when the slow call %s was hedged", q)
			} else {
				assert.Empty(t, hedges, "hedges of the fast call %s", q)
			}
		}
	})
}
