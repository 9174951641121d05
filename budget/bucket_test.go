package budget

import (
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/retryhttp/retryhttp/classify"
	"github.com/retryhttp/retryhttp/internal/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// budgetCase is a Budget under test with a way to read its balance for u.
type budgetCase struct {
	name    string
	budget  Budget
	balance func() Millitokens
}

// bothBudgets returns a Bucket and a PerHost made with opts, each with a
// function reading the balance requests to u see.
func bothBudgets(u *url.URL, opts ...Option) []budgetCase {
	bucket := NewBucket(opts...)
	hosts := NewPerHost(opts...)
	return []budgetCase{
		{"Bucket", bucket, bucket.Balance},
		{"PerHost", hosts, func() Millitokens { return hosts.Balance(u) }},
	}
}

var (
	retryVerdict   = classify.Verdict{Decision: classify.Retry}
	timeoutVerdict = classify.Verdict{Decision: classify.Retry, Timeout: true}
)

func newRequest(t testing.TB, rawURL string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, rawURL, nil)
	require.NoError(t, err)
	return req
}

func mustParse(t testing.TB, rawURL string) *url.URL {
	t.Helper()
	u, err := url.Parse(rawURL)
	require.NoError(t, err)
	return u
}

// drain withdraws until the budget refuses, and returns how many retries it
// allowed.
func drain(t *testing.T, b Budget, req *http.Request, v classify.Verdict) int {
	t.Helper()
	for n := 0; ; n++ {
		if _, err := b.Withdraw(req, v); err != nil {
			require.ErrorIs(t, err, wire.ErrBudgetExhausted)
			return n
		}
		require.Less(t, n, 1_000_000, "budget never ran out")
	}
}

func repeat(v classify.Verdict, n int) []classify.Verdict {
	vs := make([]classify.Verdict, n)
	for i := range vs {
		vs[i] = v
	}
	return vs
}

// panicMessage calls f and returns what it panicked with, or "" if it did
// not panic.
func panicMessage(f func()) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg = fmt.Sprint(r)
			if msg == "" {
				msg = "(empty panic)"
			}
		}
	}()
	f()
	return ""
}

func TestBucketDefaults(t *testing.T) {
	req := newRequest(t, "https://a.example/")
	tests := []struct {
		name      string
		verdict   classify.Verdict
		wantCost  Millitokens
		wantCount int
	}{
		{"retry", retryVerdict, 5 * Token, 100},
		{"timeout", timeoutVerdict, 10 * Token, 50},
		{"throttle costs like a retry", classify.Verdict{Decision: classify.Retry, Throttle: true}, 5 * Token, 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := NewBucket()
			require.Equal(t, 500*Token, b.Balance(), "new bucket balance")
			for i := range tt.wantCount {
				got, err := b.Withdraw(req, tt.verdict)
				require.NoError(t, err, "retry %d", i+1)
				require.Equal(t, tt.wantCost, got, "retry %d: got cost %d, want %d", i+1, got, tt.wantCost)
			}
			got, err := b.Withdraw(req, tt.verdict)
			require.ErrorIs(t, err, wire.ErrBudgetExhausted, "retry %d", tt.wantCount+1)
			assert.Zero(t, got, "amount taken by a refused retry")
			assert.Zero(t, b.Balance(), "balance after exhaustion")
		})
	}
}

func TestBucketRefusalChangesNothing(t *testing.T) {
	req := newRequest(t, "https://a.example/")
	b := NewBucket(Capacity(8), TimeoutCost(8))
	_, err := b.Withdraw(req, retryVerdict)
	require.NoError(t, err)
	require.Equal(t, 3*Token, b.Balance())

	for _, v := range []classify.Verdict{retryVerdict, timeoutVerdict} {
		got, err := b.Withdraw(req, v)
		require.ErrorIs(t, err, wire.ErrBudgetExhausted, "verdict %+v", v)
		assert.Zero(t, got)
		assert.Equal(t, 3*Token, b.Balance(), "balance after a refusal: got %d, want %d", b.Balance(), 3*Token)
	}
}

func TestBucketDeposit(t *testing.T) {
	req := newRequest(t, "https://a.example/")
	tests := []struct {
		name     string
		opts     []Option
		withdraw []classify. // before the deposits
				Verdict
		deposits []Millitokens // spent, for each success
		want     Millitokens
	}{
		{
			name:     "first attempt refunds one token",
			withdraw: []classify.Verdict{retryVerdict},
			deposits: []Millitokens{0},
			want:     496 * Token,
		},
		{
			name:     "successful retry puts back its cost",
			withdraw: []classify.Verdict{retryVerdict, retryVerdict},
			deposits: []Millitokens{5 * Token},
			want:     495 * Token,
		},
		{
			name:     "successful timeout retry puts back its cost",
			withdraw: []classify.Verdict{timeoutVerdict, timeoutVerdict},
			deposits: []Millitokens{10 * Token},
			want:     490 * Token,
		},
		{
			name:     "negative spent counts as a first attempt",
			withdraw: []classify.Verdict{retryVerdict},
			deposits: []Millitokens{-Token},
			want:     496 * Token,
		},
		{
			name:     "full bucket stays full",
			deposits: []Millitokens{0, 5 * Token, 10 * Token},
			want:     500 * Token,
		},
		{
			name:     "refunds stop at capacity",
			withdraw: []classify.Verdict{retryVerdict},
			deposits: []Millitokens{0, 0, 0, 0, 0, 0, 0},
			want:     500 * Token,
		},
		{
			name:     "spent beyond the room left stops at capacity",
			withdraw: []classify.Verdict{retryVerdict},
			deposits: []Millitokens{math.MaxInt64},
			want:     500 * Token,
		},
		{
			name:     "ten refunds of 0.1 make one token",
			opts:     []Option{Capacity(10), RetryCost(1), Refund(0.1)},
			withdraw: repeat(retryVerdict, 10),
			deposits: make([]Millitokens, 10),
			want:     Token,
		},
		{
			name:     "4 + 10 x 0.1 is exactly 5",
			opts:     []Option{Capacity(10), RetryCost(1), Refund(0.1)},
			withdraw: repeat(retryVerdict, 6),
			deposits: make([]Millitokens, 10),
			want:     5 * Token,
		},
		{
			name:     "zero refund",
			opts:     []Option{Refund(0)},
			withdraw: []classify.Verdict{retryVerdict},
			deposits: []Millitokens{0, 0},
			want:     495 * Token,
		},
		{
			name:     "fractional amounts round to the nearest thousandth",
			opts:     []Option{Capacity(10), RetryCost(2.0004), Refund(0.0016)},
			withdraw: []classify.Verdict{retryVerdict},
			deposits: []Millitokens{0},
			want:     10*Token - 2*Token + 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := NewBucket(tt.opts...)
			for _, v := range tt.withdraw {
				_, err := b.Withdraw(req, v)
				require.NoError(t, err)
			}
			for _, spent := range tt.deposits {
				b.Deposit(req, spent)
			}
			assert.Equal(t, tt.want, b.Balance(), "balance: got %d, want %d", b.Balance(), tt.want)
		})
	}
}

func TestBucketZeroCost(t *testing.T) {
	req := newRequest(t, "https://a.example/")
	b := NewBucket(Capacity(10), RetryCost(0), TimeoutCost(10))
	_, err := b.Withdraw(req, timeoutVerdict)
	require.NoError(t, err)
	require.Zero(t, b.Balance())
	for range 3 {
		got, err := b.Withdraw(req, retryVerdict)
		require.NoError(t, err, "free retry from an empty bucket")
		assert.Zero(t, got)
	}
	assert.Zero(t, b.Balance())

	h := NewPerHost(RetryCost(0))
	got, err := h.Withdraw(req, retryVerdict)
	require.NoError(t, err)
	assert.Zero(t, got)
	assert.Zero(t, h.Hosts(), "a free retry created a bucket")
}

func TestBucketOptionsPanic(t *testing.T) {
	tests := []struct {
		name string
		opts []Option
		want string // in the panic message
	}{
		{"zero capacity", []Option{Capacity(0)}, "Capacity must be positive"},
		{"negative capacity", []Option{Capacity(-1)}, "Capacity must be positive"},
		{"capacity below a thousandth", []Option{Capacity(0.0004), RetryCost(0), TimeoutCost(0)}, "Capacity must be positive"},
		{"NaN capacity", []Option{Capacity(math.NaN())}, "Capacity must be finite"},
		{"infinite capacity", []Option{Capacity(math.Inf(1))}, "Capacity must be finite"},
		{"huge capacity", []Option{Capacity(1e16)}, "Capacity is too large"},
		{"negative retry cost", []Option{RetryCost(-1)}, "RetryCost must not be negative"},
		{"NaN retry cost", []Option{RetryCost(math.NaN())}, "RetryCost must be finite"},
		{"infinite retry cost", []Option{RetryCost(math.Inf(1))}, "RetryCost must be finite"},
		{"retry cost above capacity", []Option{RetryCost(500.001)}, "RetryCost (500.001) must not exceed Capacity (500)"},
		{"capacity below default retry cost", []Option{Capacity(4), TimeoutCost(4)}, "RetryCost (5) must not exceed Capacity (4)"},
		{"negative timeout cost", []Option{TimeoutCost(-0.5)}, "TimeoutCost must not be negative"},
		{"NaN timeout cost", []Option{TimeoutCost(math.NaN())}, "TimeoutCost must be finite"},
		{"infinite timeout cost", []Option{TimeoutCost(math.Inf(-1))}, "TimeoutCost must be finite"},
		{"timeout cost above capacity", []Option{TimeoutCost(600)}, "TimeoutCost (600) must not exceed Capacity (500)"},
		{"negative refund", []Option{Refund(-0.1)}, "Refund must not be negative"},
		{"NaN refund", []Option{Refund(math.NaN())}, "Refund must be finite"},
		{"infinite refund", []Option{Refund(math.Inf(1))}, "Refund must be finite"},
		{"huge refund", []Option{Refund(1e17)}, "Refund is too large"},
		{"zero max hosts", []Option{MaxHosts(0)}, "MaxHosts must be at least 1"},
		{"negative max hosts", []Option{MaxHosts(-1)}, "MaxHosts must be at least 1"},
	}
	constructors := []struct {
		name string
		new  func(...Option)
	}{
		{"NewBucket", func(opts ...Option) { NewBucket(opts...) }},
		{"NewPerHost", func(opts ...Option) { NewPerHost(opts...) }},
	}
	for _, c := range constructors {
		for _, tt := range tests {
			t.Run(c.name+"/"+tt.name, func(t *testing.T) {
				got := panicMessage(func() { c.new(tt.opts...) })
				assert.Contains(t, got, "budget: "+tt.want, "panic message: got %q, want it to contain %q", got, tt.want)
			})
		}
	}
}

func TestBucketOptionsValid(t *testing.T) {
	tests := []struct {
		name string
		opts []Option
		want Millitokens // capacity
	}{
		{"costs equal to capacity", []Option{Capacity(7), RetryCost(7), TimeoutCost(7)}, 7 * Token},
		{"free retries and no refund", []Option{RetryCost(0), TimeoutCost(0), Refund(0)}, 500 * Token},
		{"smallest capacity", []Option{Capacity(0.001), RetryCost(0), TimeoutCost(0.001)}, 1},
		{"largest capacity", []Option{Capacity(9e15)}, 9e18},
		{"refund above capacity", []Option{Refund(1000)}, 500 * Token},
		{"one host", []Option{MaxHosts(1)}, 500 * Token},
		{"later options win", []Option{Capacity(0), Capacity(20)}, 20 * Token},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Empty(t, panicMessage(func() { NewPerHost(tt.opts...) }))
			b := NewBucket(tt.opts...)
			assert.Equal(t, tt.want, b.Balance(), "initial balance: got %d, want %d", b.Balance(), tt.want)
		})
	}
}

// TestBudgetConcurrent has goroutines withdraw and deposit on one host as
// Transports would: a withdrawal is followed by a deposit of what it took
// (the retry succeeded) or by nothing (it failed), and first-attempt refunds
// never put back more than has been lost, so the capacity is never reached
// and the final balance is exactly the capacity minus what was taken plus
// what was put back.
func TestBudgetConcurrent(t *testing.T) {
	const (
		goroutines = 8
		ops        = 10_000
		capacity   = 500 * Token
		refund     = Token / 10
	)
	u := mustParse(t, "https://a.example/")
	req := newRequest(t, u.String())
	for _, tt := range bothBudgets(u, Refund(0.1)) {
		t.Run(tt.name, func(t *testing.T) {
			var (
				wg                sync.WaitGroup
				taken, putBack    atomic.Int64
				allowed, refused  atomic.Int64
				outOfRange, first atomic.Int64
				start             = make(chan struct{})
			)
			for g := range goroutines {
				wg.Go(func() {
					<-start // maximise overlap
					rng := rand.New(rand.NewPCG(uint64(g), 1))
					var pending []Millitokens // taken by retries still in flight
					var lost Millitokens      // taken by retries that failed, not yet refunded
					for range ops {
						switch r := rng.IntN(10); {
						case r < 4:
							v := retryVerdict
							if r == 0 {
								v = timeoutVerdict
							}
							spent, err := tt.budget.Withdraw(req, v)
							if err != nil {
								refused.Add(1)
								break
							}
							allowed.Add(1)
							taken.Add(int64(spent))
							pending = append(pending, spent)
						case r < 6 && len(pending) > 0: // the retry succeeded
							spent := pending[len(pending)-1]
							pending = pending[:len(pending)-1]
							tt.budget.Deposit(req, spent)
							putBack.Add(int64(spent))
						case r < 8 && len(pending) > 0: // the retry failed
							lost += pending[len(pending)-1]
							pending = pending[:len(pending)-1]
						case lost >= refund: // a first attempt succeeded
							lost -= refund
							tt.budget.Deposit(req, 0)
							putBack.Add(int64(refund))
						}
						if got := tt.balance(); got < 0 || got > capacity {
							outOfRange.Add(1)
							first.CompareAndSwap(0, int64(got))
						}
					}
				})
			}
			close(start)
			wg.Wait()

			assert.Zero(t, outOfRange.Load(), "balances outside [0, %d], the first %d", capacity, first.Load())
			assert.Positive(t, allowed.Load(), "retries allowed")
			assert.Positive(t, refused.Load(), "retries refused")
			want := capacity - Millitokens(taken.Load()) + Millitokens(putBack.Load())
			assert.Equal(t, want, tt.balance(), "final balance: got %d, want %d (taken %d, put back %d)",
				tt.balance(), want, taken.Load(), putBack.Load())
		})
	}
}

// TestBudgetConservation has goroutines contend on one host's bucket with
// retries that all succeed, each putting back exactly what it took. Half the
// bucket is taken first, so that no deposit reaches the capacity: the bucket
// must end where it started.
func TestBudgetConservation(t *testing.T) {
	const (
		goroutines = 8
		ops        = 10_000
	)
	u := mustParse(t, "https://a.example/")
	req := newRequest(t, u.String())
	for _, tt := range bothBudgets(u) {
		t.Run(tt.name, func(t *testing.T) {
			for range 25 {
				_, err := tt.budget.Withdraw(req, timeoutVerdict)
				require.NoError(t, err)
			}
			want := tt.balance()
			require.Equal(t, 250*Token, want)

			var (
				wg      sync.WaitGroup
				allowed atomic.Int64
				start   = make(chan struct{})
			)
			for g := range goroutines {
				wg.Go(func() {
					<-start
					v := classify.Verdict{Decision: classify.Retry, Timeout: g%2 == 0}
					for range ops {
						if spent, err := tt.budget.Withdraw(req, v); err == nil {
							allowed.Add(1)
							tt.budget.Deposit(req, spent)
						}
					}
				})
			}
			close(start)
			wg.Wait()

			assert.Equal(t, int64(goroutines*ops), allowed.Load(), "retries allowed")
			assert.Equal(t, want, tt.balance(), "final balance: got %d, want %d", tt.balance(), want)
		})
	}
}

func BenchmarkBucketDepositFullParallel(b *testing.B) {
	bucket := NewBucket()
	req := newRequest(b, "https://a.example/")
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			bucket.Deposit(req, 0)
		}
	})
}
