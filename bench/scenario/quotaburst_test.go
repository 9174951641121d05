package scenario

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestQuotaBurstIsSentAtTheQuota fires the burst of the quota scenario
// (300 keyed POSTs at once at a bucket of 20 a second holding 20, OpenAI's
// headers, 1% of admissions answered 500) through retryhttp's three paced
// rows at once (about 16 s), and holds each to its goal: with MaxWait
// 30 s, all 300 succeed; at the default MaxWait, every request succeeds
// or fails with a *pace.Error, none with a 429 or a 500; with the quota
// declared, all succeed and at most 1% of what reaches the server is a
// 429 (none, as a rule). The goal of 16.5 s for the last to end with
// MaxWait 30 s (14.8 s alone, up to 16.3 s beside the fleet's test and
// another module's tests under -race) is held with a margin: 18 s.
func TestQuotaBurstIsSentAtTheQuota(t *testing.T) {
	t.Parallel()
	br := DefaultBurst()
	rows := BurstRows(br)[:3]
	got := make([]BurstResult, len(rows))
	var wg sync.WaitGroup
	for i, row := range rows {
		wg.Go(func() { got[i] = br.Run(context.Background(), row) })
	}
	wg.Wait()
	tb := br.table()
	for i, row := range rows {
		tb.Add(br.cells(row.Name, got[i])...)
	}
	logTable(t, tb)

	for i, row := range rows {
		t.Run(row.Name, func(t *testing.T) {
			r := got[i]
			assert.Equal(t, br.Requests, r.Requests, "requests fired")
			assert.Zero(t, r.Others(), "requests that ended in a 429, a 500 or an error")
			switch row.Name {
			case BurstMaxWait30:
				assert.Equal(t, br.Requests, r.OK, "succeeded")
				assert.LessOrEqual(t, r.Last, 18*time.Second, "time until the last ended (goal 16.5 s)")
			case BurstDefault:
				assert.Positive(t, r.Paced, "requests whose turn was more than 10 s off")
				assert.Positive(t, r.OK, "succeeded")
			case BurstQuota:
				assert.Equal(t, br.Requests, r.OK, "succeeded")
				assert.LessOrEqual(t, r.ThrottledShare(), 0.01, "share of 429s at the server")
			}
		})
	}
}

// TestQuotaBucketFailsItsShare checks the burst's faults: the bucket
// answers 500 to its share Fail of the attempts it admits, chosen by the
// seed, the request and the attempt, each taking its token, and refuses
// with 429 beyond its burst as before.
func TestQuotaBucketFailsItsShare(t *testing.T) {
	for _, tt := range []struct {
		fail      float64
		want500   int
		wantTotal int
	}{{0, 0, 20}, {1, 20, 20}} {
		q := newQuota(QuotaRun{Quota: 20, Burst: 20, Fail: tt.fail, Seed: 1})
		q.begin(time.Now())
		got500, got429 := 0, 0
		for i := range 30 {
			w := httptest.NewRecorder()
			r := httptest.NewRequest(http.MethodPost, "/", nil)
			r.Header.Set(IDHeader, id("b", i))
			q.serve(w, r, 1)
			switch w.Code {
			case http.StatusInternalServerError:
				got500++
			case http.StatusTooManyRequests:
				got429++
			}
		}
		assert.Equal(t, tt.want500, got500, "500s at Fail %g", tt.fail)
		assert.Equal(t, tt.want500, q.failed, "500s counted at Fail %g", tt.fail)
		assert.GreaterOrEqual(t, got429, 9, "429s beyond the burst at Fail %g", tt.fail)
		assert.Len(t, q.admitted, tt.wantTotal, "admitted at Fail %g", tt.fail)
	}
	picked := 0
	for i := range 2000 {
		if unitHash(1, id("b", i), 1) < 0.01 {
			picked++
		}
	}
	assert.InDelta(t, 20, picked, 10, "first attempts of 2000 requests answered 500 at 1%")
}
