package budget

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/retryhttp/retryhttp/classify"
	"github.com/retryhttp/retryhttp/internal/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPerHostKeys(t *testing.T) {
	tests := []struct {
		name string
		a, b string
		same bool
	}{
		{"different hosts", "https://a.example/", "https://b.example/", false},
		{"case and default https port", "https://A.EXAMPLE:443/x", "https://a.example/y", true},
		{"default http port", "http://a.example:80/", "http://A.example/", true},
		{"different schemes", "http://a.example/", "https://a.example/", false},
		{"other port", "https://a.example:8443/", "https://a.example/", false},
		{"http default port on https", "https://a.example:80/", "https://a.example/", false},
		{"https default port on http", "http://a.example:443/", "http://a.example/", false},
		{"IPv6 with default port", "https://[::1]:443/", "https://[::1]/", true},
		{"IPv6 ports differ", "https://[::1]:8443/", "https://[::1]/", false},
		{"path and query do not matter", "https://a.example/p?q=1", "https://a.example/r", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := NewPerHost(Capacity(10))
			reqA, reqB := newRequest(t, tt.a), newRequest(t, tt.b)
			require.Equal(t, 2, drain(t, h, reqA, retryVerdict), "retries allowed to %s", tt.a)
			require.Equal(t, 1, h.Hosts())

			want := 10 * Token
			if tt.same {
				want = 0
			}
			got := h.Balance(mustParse(t, tt.b))
			assert.Equal(t, want, got, "balance of %s after draining %s: got %d, want %d", tt.b, tt.a, got, want)
			_, err := h.Withdraw(reqB, retryVerdict)
			if tt.same {
				assert.ErrorIs(t, err, wire.ErrBudgetExhausted, "retry of %s after draining %s", tt.b, tt.a)
				assert.Equal(t, 1, h.Hosts())
			} else {
				assert.NoError(t, err, "retry of %s after draining %s", tt.b, tt.a)
				assert.Equal(t, 2, h.Hosts())
			}
		})
	}
}

func TestPerHostRequestHost(t *testing.T) {
	h := NewPerHost(Capacity(10))
	// As on a server, or a client request built by hand: no URL.Host.
	req := &http.Request{
		Method: http.MethodGet,
		URL:    &url.URL{Scheme: "https", Path: "/"},
		Host:   "A.example:443",
		Header: http.Header{},
	}
	require.Equal(t, 2, drain(t, h, req, retryVerdict))
	assert.Zero(t, h.Balance(mustParse(t, "https://a.example/")), "balance of req.Host")
	assert.Equal(t, 10*Token, h.Balance(mustParse(t, "https://b.example/")), "balance of another host")

	// URL.Host wins over req.Host when both are set.
	other := newRequest(t, "https://b.example/")
	other.Host = "a.example"
	_, err := h.Withdraw(other, retryVerdict)
	require.NoError(t, err)
	assert.Equal(t, 5*Token, h.Balance(mustParse(t, "https://b.example/")))
}

func TestPerHostDepositUnknownHost(t *testing.T) {
	h := NewPerHost()
	for i := range 1000 {
		req := newRequest(t, fmt.Sprintf("https://h%d.example/", i))
		h.Deposit(req, 0)
		h.Deposit(req, 5*Token)
	}
	assert.Zero(t, h.Hosts(), "buckets created by deposits")
	assert.Equal(t, 500*Token, h.Balance(mustParse(t, "https://h1.example/")))
	assert.Nil(t, h.debts.Load(), "debts made by deposits")
}

func TestPerHostDepositRefillsHost(t *testing.T) {
	h := NewPerHost()
	req := newRequest(t, "https://a.example/")
	u := mustParse(t, "https://a.example/")
	spent, err := h.Withdraw(req, timeoutVerdict)
	require.NoError(t, err)
	require.Equal(t, 490*Token, h.Balance(u))
	h.Deposit(req, 0)
	assert.Equal(t, 491*Token, h.Balance(u), "after a first-attempt success")
	h.Deposit(req, spent)
	assert.Equal(t, 500*Token, h.Balance(u), "after a successful retry")
	h.Deposit(req, spent)
	assert.Equal(t, 500*Token, h.Balance(u), "after a deposit into a full bucket")
}

func TestPerHostHostileStream(t *testing.T) {
	const maxHosts, n = 64, 100_000
	h := NewPerHost(MaxHosts(maxHosts))
	hosts := make([]*http.Request, n)
	ok := 0
	for i := range hosts {
		hosts[i] = newRequest(t, fmt.Sprintf("https://h%d.example/", i))
		if _, err := h.Withdraw(hosts[i], retryVerdict); err == nil {
			ok++
		} else {
			require.ErrorIs(t, err, wire.ErrBudgetExhausted)
		}
		if got := h.Hosts(); got > maxHosts {
			t.Fatalf("after %d hosts: got %d buckets, want at most %d", i+1, got, maxHosts)
		}
	}
	// Each host has a bucket of its own while it is among the last 64
	// used; the debts of the others are kept in a table of fixed size.
	assert.Equal(t, maxHosts, h.Hosts())
	assert.Equal(t, n, ok, "retries allowed: one per host")
	assert.Len(t, h.debts.Load().slots, debtSlotsPerHost*maxHosts)
	for i := n - maxHosts; i < n; i++ {
		require.NotNil(t, h.lookup(wire.RequestKey(hosts[i])), "host %d, among the last used, has no bucket", i)
	}
}

func TestPerHostForgetsTheLeastRecentlyUsed(t *testing.T) {
	const maxHosts = 4
	h := NewPerHost(MaxHosts(maxHosts))
	req := func(i int) *http.Request { return newRequest(t, fmt.Sprintf("https://h%d.example/", i)) }
	for i := range maxHosts {
		_, err := h.Withdraw(req(i), retryVerdict)
		require.NoError(t, err)
	}
	h.Deposit(req(0), 0) // h0 is used again: h1 is now the least recently used
	_, err := h.Withdraw(req(maxHosts), retryVerdict)
	require.NoError(t, err)
	assert.NotNil(t, h.lookup(wire.RequestKey(req(0))), "h0, used again, keeps its bucket")
	assert.Nil(t, h.lookup(wire.RequestKey(req(1))), "h1, the least recently used, is forgotten")
	assert.Equal(t, 495*Token, h.Balance(req(1).URL), "h1's debt is kept")

	// h1 comes back with its debt.
	_, err = h.Withdraw(req(1), retryVerdict)
	require.NoError(t, err)
	assert.Equal(t, 490*Token, h.Balance(req(1).URL))
	assert.Nil(t, h.lookup(wire.RequestKey(req(2))), "h2 made room")
}

// TestPerHostRotationKeepsDebts checks that a host that is down, called
// in turn with more hosts than the table holds, has no more retries than
// its bucket allows: forgetting it does not forgive its debt.
func TestPerHostRotationKeepsDebts(t *testing.T) {
	const maxHosts, hosts, rounds = 8, 24, 50
	h := NewPerHost(MaxHosts(maxHosts), Capacity(20))
	allowed := make([]int, hosts)
	for range rounds {
		for i := range hosts {
			if _, err := h.Withdraw(newRequest(t, fmt.Sprintf("https://down%d.example/", i)), retryVerdict); err == nil {
				allowed[i]++
			}
		}
	}
	total := 0
	for _, n := range allowed {
		total += n
	}
	// A bucket of 20 tokens pays for 4 retries of 5. Forgiven at each
	// eviction, the debts would allow a retry per call, 1200 in all; two
	// hosts whose slots in the table of debts are both taken by as large
	// debts can lose theirs, which is rare.
	assert.GreaterOrEqual(t, total, 4*hosts)
	assert.LessOrEqual(t, total, 5*hosts, "retries allowed: %v", allowed)
	assert.LessOrEqual(t, h.Hosts(), maxHosts)
}

func TestPerHostOneHost(t *testing.T) {
	h := NewPerHost(MaxHosts(1), Capacity(10))
	a, b := newRequest(t, "https://a.example/"), newRequest(t, "https://b.example/")
	_, err := h.Withdraw(a, retryVerdict)
	require.NoError(t, err)
	_, err = h.Withdraw(b, retryVerdict) // a is forgotten, owing 5
	require.NoError(t, err)
	assert.Equal(t, 1, h.Hosts())
	assert.Equal(t, 5*Token, h.Balance(a.URL))
	assert.Equal(t, 5*Token, h.Balance(b.URL))
	h.Deposit(b, 5*Token)
	assert.Equal(t, 10*Token, h.Balance(b.URL))

	h.Deposit(a, 5*Token) // a has no bucket: its debt waits for its next one
	assert.Equal(t, 5*Token, h.Balance(a.URL))
	_, err = h.Withdraw(a, retryVerdict) // b's full bucket makes room
	require.NoError(t, err)
	assert.Equal(t, 0*Token, h.Balance(a.URL))
	assert.Equal(t, 10*Token, h.Balance(b.URL))
	_, err = h.Withdraw(a, retryVerdict)
	assert.ErrorIs(t, err, wire.ErrBudgetExhausted)
}

// TestPerHostEvictedBucket checks what a request that looked a bucket up
// just before it was evicted sees.
func TestPerHostEvictedBucket(t *testing.T) {
	h := NewPerHost(MaxHosts(1), Capacity(10))
	a, b := newRequest(t, "https://a.example/"), newRequest(t, "https://b.example/")
	_, err := h.Withdraw(a, retryVerdict)
	require.NoError(t, err)
	h.Deposit(a, 5*Token)
	stale := h.lookup(wire.RequestKey(a))
	require.NotNil(t, stale)
	_, err = h.Withdraw(b, retryVerdict)
	require.NoError(t, err)
	require.Nil(t, h.lookup(wire.RequestKey(a)), "a's bucket was not evicted")

	ok, live := stale.take(5 * Token)
	assert.False(t, ok, "took from an evicted bucket")
	assert.False(t, live, "evicted bucket reported live")
	assert.False(t, stale.put(Token), "put into an evicted bucket reported live")
	assert.Equal(t, Millitokens(evicted), stale.Balance(), "evicted bucket changed")
	assert.Equal(t, 10*Token, h.Balance(a.URL), "balance of an evicted host")
}

func TestPerHostAllocs(t *testing.T) {
	h := NewPerHost()
	tracked, untracked := newRequest(t, "https://a.example/"), newRequest(t, "https://b.example/")
	_, err := h.Withdraw(tracked, retryVerdict)
	require.NoError(t, err)
	tests := []struct {
		name string
		f    func()
	}{
		{"deposit, untracked host", func() { h.Deposit(untracked, 0) }},
		{"deposit, tracked host", func() { h.Deposit(tracked, 0) }},
		{"withdraw and deposit, tracked host", func() {
			spent, _ := h.Withdraw(tracked, retryVerdict)
			h.Deposit(tracked, spent)
		}},
		{"balance", func() { h.Balance(tracked.URL) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := testing.AllocsPerRun(100, tt.f)
			assert.Zero(t, got, "allocations: got %v, want 0", got)
		})
	}
}

// TestPerHostConcurrentEviction has goroutines use more hosts than there
// is room for, so that buckets are created, swept and evicted while others
// use them.
func TestPerHostConcurrentEviction(t *testing.T) {
	const (
		goroutines = 8
		ops        = 10_000
		hosts      = 32
		maxHosts   = 8
		capacity   = 20 * Token
	)
	h := NewPerHost(MaxHosts(maxHosts), Capacity(20))
	reqs := make([]*http.Request, hosts)
	for i := range reqs {
		reqs[i] = newRequest(t, fmt.Sprintf("https://h%d.example/", i))
	}
	var (
		wg                          sync.WaitGroup
		tooMany, outOfRange         atomic.Int64
		allowed, refused, wrongCost atomic.Int64
		start                       = make(chan struct{})
	)
	for g := range goroutines {
		wg.Go(func() {
			<-start
			rng := rand.New(rand.NewPCG(uint64(g), 2))
			for range ops {
				req := reqs[rng.IntN(hosts)]
				v := retryVerdict
				if rng.IntN(4) == 0 {
					v = timeoutVerdict
				}
				spent, err := h.Withdraw(req, v)
				switch {
				case errors.Is(err, wire.ErrBudgetExhausted):
					refused.Add(1)
				case err != nil || spent != h.cost(v):
					wrongCost.Add(1)
				default:
					allowed.Add(1)
					if rng.IntN(2) == 0 {
						h.Deposit(req, spent)
					}
				}
				h.Deposit(reqs[rng.IntN(hosts)], 0)
				if n := h.Hosts(); n > maxHosts {
					tooMany.Add(1)
				}
				if got := h.Balance(req.URL); got < 0 || got > capacity {
					outOfRange.Add(1)
				}
			}
		})
	}
	close(start)
	wg.Wait()

	assert.Zero(t, tooMany.Load(), "times more than %d buckets existed", maxHosts)
	assert.Zero(t, outOfRange.Load(), "balances outside [0, %d]", capacity)
	assert.Zero(t, wrongCost.Load(), "withdrawals with a wrong amount or error")
	assert.Positive(t, allowed.Load(), "retries allowed")
	assert.Positive(t, refused.Load(), "retries refused")
}

// BenchmarkHostBudgetDepositParallel measures the deposits of healthy
// traffic: to a host without a bucket, and to a host whose bucket is full.
func BenchmarkHostBudgetDepositParallel(b *testing.B) {
	for _, tracked := range []bool{false, true} {
		name := "untracked"
		if tracked {
			name = "tracked"
		}
		b.Run(name, func(b *testing.B) {
			h := NewPerHost()
			req := newRequest(b, "https://a.example/")
			other := newRequest(b, "https://b.example/")
			// A bucket in the table, so that lookups hash the key.
			_, err := h.Withdraw(other, retryVerdict)
			require.NoError(b, err)
			if tracked {
				spent, err := h.Withdraw(req, retryVerdict)
				require.NoError(b, err)
				h.Deposit(req, spent)
			}
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					h.Deposit(req, 0)
				}
			})
		})
	}
}

func BenchmarkHostBudgetWithdrawDepositParallel(b *testing.B) {
	h := NewPerHost()
	req := newRequest(b, "https://a.example/")
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if spent, err := h.Withdraw(req, retryVerdict); err == nil {
				h.Deposit(req, spent)
			}
		}
	})
}

// BenchmarkHostBudgetManyHosts spreads retries that succeed over fewer hosts
// than there is room for (the default 1024), and over more, which makes the
// PerHost evict buckets and create new ones all the time.
func BenchmarkHostBudgetManyHosts(b *testing.B) {
	for _, hosts := range []int{100, 10_000} {
		b.Run(fmt.Sprintf("hosts=%d", hosts), func(b *testing.B) {
			h := NewPerHost()
			reqs := make([]*http.Request, hosts)
			for i := range reqs {
				reqs[i] = newRequest(b, fmt.Sprintf("https://h%d.example/", i))
			}
			var next atomic.Uint64
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					req := reqs[next.Add(1)%uint64(hosts)]
					if spent, err := h.Withdraw(req, retryVerdict); err == nil {
						h.Deposit(req, spent)
					}
				}
			})
		})
	}
}

func TestDestination(t *testing.T) {
	tests := []struct {
		url, host        string
		scheme, wantHost string
	}{
		{"https://A.Example:443/x", "", "https", "a.example"},
		{"http://a.example:80/", "", "http", "a.example"},
		{"http://a.example:8080/", "", "http", "a.example:8080"},
		{"https://a.example:80/", "", "https", "a.example:80"},
		{"HTTP://a.example/", "", "http", "a.example"},
		{"/relative", "B.example:443", "", "b.example:443"},
	}
	for _, tt := range tests {
		req := httptest.NewRequest(http.MethodGet, "http://placeholder/", nil)
		u, err := url.Parse(tt.url)
		require.NoError(t, err)
		req.URL, req.Host = u, tt.host
		scheme, host := Key(req)
		assert.Equal(t, tt.scheme, scheme, tt.url)
		assert.Equal(t, tt.wantHost, host, tt.url)
	}
	req := httptest.NewRequest(http.MethodGet, "https://a.example/", nil)
	assert.Zero(t, testing.AllocsPerRun(100, func() { Key(req) }), "lower-case hosts cost nothing")
}

// deadHostRetries withdraws, from a PerHost holding maxHosts hosts, the
// retries of rounds requests to a dead host (2 retries of 5 tokens each,
// while its bucket pays), each round after warm rounds of warmOthers other
// hosts, and then others other hosts, new ones, each making retries
// retries of cost v. It returns the dead host's retries.
func deadHostRetries(t *testing.T, maxHosts, rounds, warm, warmOthers, others, retries int, v classify.Verdict) int {
	t.Helper()
	h := NewPerHost(MaxHosts(maxHosts))
	dead := newRequest(t, "https://dead.example/")
	got, next := 0, 0
	for r := range warm + rounds {
		for range 2 {
			if _, err := h.Withdraw(dead, retryVerdict); err == nil {
				got++
			}
		}
		n := others
		if r < warm {
			n = warmOthers
		}
		for range n {
			req := newRequest(t, "https://c"+strconv.Itoa(next)+".example/")
			next++
			for range retries {
				if _, err := h.Withdraw(req, v); err != nil {
					break
				}
			}
		}
	}
	return got
}

// TestPerHostDeadHostUnderChurn checks the bound of a dead host (100
// retries: its bucket of 500 tokens at 5 a retry) with a table of 16 hosts,
// as other hosts come and go between its requests: where PerHost's
// documentation says it holds, and what the dead host gets where it says
// it does not.
func TestPerHostDeadHostUnderChurn(t *testing.T) {
	const maxHosts, rounds = 16, 120
	tests := []struct {
		name             string
		warm, warmOthers int
		others, retries  int
		v                classify.Verdict
		min, max         int
	}{
		// Fewer others than the table holds: the dead host keeps its bucket.
		{name: "15 hosts owing 20 a round", others: 15, retries: 2, v: timeoutVerdict, min: 100, max: 100},
		// Its debt, 10 tokens after its first request, is never the
		// smallest: no debt takes its place.
		{name: "1000 new hosts owing 5 a round", others: 1000, retries: 1, v: retryVerdict, min: 100, max: 100},
		// Once its debt has outgrown theirs (50 tokens after 5 rounds in its
		// bucket), no number of hosts owing less makes it forgotten.
		{name: "1000 new hosts owing 20 a round, after its debt outgrew theirs",
			warm: 5, warmOthers: 15, others: 1000, retries: 2, v: timeoutVerdict, min: 100, max: 100},
		// The condition documented: called once between more than about 3
		// times as many hosts as the table holds, each owing more than its
		// first requests (20 tokens: two retries after a timeout), it may
		// lose its debt while its debt is small, and then each of its
		// requests gets its 2 retries, as a new host's would; between 60
		// times as many, it always does.
		{name: "100 new hosts owing 20 a round", others: 100, retries: 2, v: timeoutVerdict, min: 100, max: 2 * rounds},
		{name: "200 new hosts owing 20 a round", others: 200, retries: 2, v: timeoutVerdict, min: 100, max: 2 * rounds},
		{name: "1000 new hosts owing 20 a round", others: 1000, retries: 2, v: timeoutVerdict, min: 2 * rounds, max: 2 * rounds},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := deadHostRetries(t, maxHosts, rounds, tt.warm, tt.warmOthers, tt.others, tt.retries, tt.v)
			t.Logf("the dead host's retries: %d over %d requests", got, tt.warm+rounds)
			assert.GreaterOrEqual(t, got, tt.min)
			assert.LessOrEqual(t, got, tt.max)
		})
	}
}
