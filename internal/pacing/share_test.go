package pacing

import (
	"math"
	"net/http"
	"testing"
	"time"

	public "github.com/retryhttp/retryhttp/pace"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAFleetsViewPacesTheKey: a hold another member met holds this
// member's turns; a quota is this member's share of it by demand; a key
// only the fleet throttled is paced here too.
func TestAFleetsViewPacesTheKey(t *testing.T) {
	p := newPacer()
	p.Observe(keyA, testNow, testNow, http.StatusOK, header("X-Ratelimit-Remaining", "0", "X-Ratelimit-Reset", "1"))
	require.True(t, p.Paces(keyA))

	at := after(2 * time.Second)
	p.merge(keyA, public.Report{Key: keyA.String(), Demand: 10, Hold: at.Add(5 * time.Second), Members: 2}, at)
	_, wait, ok := p.Reserve(keyA, at, time.Minute)
	require.True(t, ok)
	assert.GreaterOrEqual(t, wait, 5*time.Second, "held by the fleet's hold")

	p.merge(keyB, public.Report{Key: keyB.String(), Demand: 1, Cut: at, Members: 1}, at)
	assert.True(t, p.Paces(keyB), "a key the fleet throttled")

	st := p.lookup(keyA)
	st.mu.Lock()
	st.demand = 10
	st.mu.Unlock()
	p.merge(keyA, public.Report{Key: keyA.String(), Demand: 40, Members: 4}, at)
	st.mu.Lock()
	assert.InDelta(t, (10+demandFloor)/(40+4*demandFloor), st.shareOf(st.ns(at)), 1e-9, "its share, by demand")
	assert.InDelta(t, 1, st.shareOf(st.ns(at.Add(shareLease+10*time.Second))), 1e-9, "the whole, once the lease is long past")
	st.mu.Unlock()
}

// TestAStoresGarbageIsNotBelieved: a view no member could have reported
// fails the exchange whole.
func TestAStoresGarbageIsNotBelieved(t *testing.T) {
	p := newPacer()
	p.holdLimit = int64(time.Minute)
	for _, f := range []public.Report{
		{Key: "https://a.example.com", Demand: math.NaN(), Members: 1},
		{Key: "https://a.example.com", Demand: 1, Members: 0},
		{Key: "https://a.example.com", Demand: 1, Members: 1, Quota: math.Inf(1)},
		{Key: "https://a.example.com", Demand: 1, Members: 1, Cut: testNow.Add(time.Hour)},
		{Key: "https://a.example.com", Demand: 1, Members: 1, Hold: testNow.Add(time.Hour)},
		{Key: "HTTPS://a.example.com", Demand: 1, Members: 1},
	} {
		_, ok := p.valid(f, testNow)
		assert.False(t, ok, "%+v", f)
	}
	_, ok := p.valid(public.Report{Key: "https://a.example.com", Demand: 1, Members: 1, Hold: testNow.Add(time.Minute)}, testNow)
	assert.True(t, ok)
}

// TestADemandIsSteadyOverExchanges: a member asking 10 turns a second,
// evenly, reports a demand within a fifth of it at every exchange once it
// has asked for a few seconds, though most exchanges count none: shares
// that swing with each exchange would let a fleet's sends swing with them.
func TestADemandIsSteadyOverExchanges(t *testing.T) {
	var st state
	n := int64(time.Hour)
	st.report(keyA, n)
	for i := 1; i <= 500; i++ { // 10 s of exchanges
		n += int64(shareEvery)
		if i%5 == 0 { // one ask a 100 ms
			st.asks++
		}
		r := st.report(keyA, n)
		if i >= 150 {
			assert.InDelta(t, 10, r.Demand, 2, "exchange %d", i)
		}
	}
}
