package redisbudget

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/retryhttp/retryhttp/budget"
)

// fakeStore is an in-memory store with the scripts' arithmetic, which
// counts its calls and can fail or hang on demand.
type fakeStore struct {
	mu       sync.Mutex
	capacity budget.Millitokens
	buckets  map[string]budget.Millitokens // a missing bucket is full
	takes    int
	refunds  int
	probes   int
	probed   string          // the key of the last probe
	err      error           // returned by every call while set
	hang     chan struct{}   // while set, calls wait for it to close, ignoring ctx
	bad      map[string]bool // keys of another type: calls on them fail with a *keyError
}

func newFakeStore(capacity budget.Millitokens) *fakeStore {
	return &fakeStore{capacity: capacity, buckets: map[string]budget.Millitokens{}, bad: map[string]bool{}}
}

// enter counts a call on key, waits while the store hangs, and returns the
// error it is set to fail with, or a *keyError if key is bad. It returns
// with s.mu held.
func (s *fakeStore) enter(counter *int, key string) error {
	s.mu.Lock()
	*counter++
	hang := s.hang
	s.mu.Unlock()
	if hang != nil {
		<-hang
	}
	s.mu.Lock()
	if s.err == nil && s.bad[key] {
		return &keyError{key: key, err: errWrongType}
	}
	return s.err
}

func (s *fakeStore) take(_ context.Context, key string, cost budget.Millitokens) (bool, budget.Millitokens, error) {
	err := s.enter(&s.takes, key)
	defer s.mu.Unlock()
	if err != nil {
		return false, 0, err
	}
	bal, ok := s.buckets[key]
	if !ok {
		bal = s.capacity
	}
	if bal < cost {
		return false, bal, nil
	}
	s.buckets[key] = bal - cost
	return true, bal - cost, nil
}

func (s *fakeStore) refund(_ context.Context, key string, amount budget.Millitokens) (budget.Millitokens, error) {
	err := s.enter(&s.refunds, key)
	defer s.mu.Unlock()
	if err != nil {
		return 0, err
	}
	bal, ok := s.buckets[key]
	if !ok || bal+amount >= s.capacity {
		delete(s.buckets, key)
		return s.capacity, nil
	}
	s.buckets[key] = bal + amount
	return bal + amount, nil
}

func (s *fakeStore) balance(_ context.Context, key string) (budget.Millitokens, error) {
	var n int
	err := s.enter(&n, key)
	defer s.mu.Unlock()
	if err != nil {
		return 0, err
	}
	if bal, ok := s.buckets[key]; ok {
		return bal, nil
	}
	return s.capacity, nil
}

func (s *fakeStore) probe(_ context.Context, key string) error {
	err := s.enter(&s.probes, key)
	s.probed = key
	s.mu.Unlock()
	return err
}

func (s *fakeStore) load(context.Context) error {
	var n int
	err := s.enter(&n, "")
	s.mu.Unlock()
	return err
}

// set changes the store's failure mode.
func (s *fakeStore) set(err error, hang chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.err, s.hang = err, hang
}

// counts returns the calls made so far.
func (s *fakeStore) counts() (takes, refunds, probes int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.takes, s.refunds, s.probes
}

// setBad makes the key at key hold a value of another type, or a bucket
// again.
func (s *fakeStore) setBad(key string, bad bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bad[key] = bad
}

// bucket returns the balance of the bucket at key.
func (s *fakeStore) bucket(key string) budget.Millitokens {
	s.mu.Lock()
	defer s.mu.Unlock()
	if bal, ok := s.buckets[key]; ok {
		return bal
	}
	return s.capacity
}

// newFakeBudget returns a Budget over a new fakeStore, closed when the test
// ends.
func newFakeBudget(t *testing.T, opts ...Option) (*Budget, *fakeStore) {
	t.Helper()
	return newFakeBudgetWith(t, nil, opts...)
}

// newFakeBudgetWith is newFakeBudget whose store prep has set up, as for a
// process that starts while Redis fails, before the budget sends anything.
func newFakeBudgetWith(t *testing.T, prep func(*fakeStore), opts ...Option) (*Budget, *fakeStore) {
	t.Helper()
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	cfg.check()
	l := bucketLimits(cfg.bucket)
	s := newFakeStore(l.capacity)
	if prep != nil {
		prep(s)
	}
	b := newBudget(s, "test", l, cfg)
	t.Cleanup(func() { b.Close() })
	<-b.warmed
	return b, s
}

var (
	errDown      = errors.New("connection refused")
	errWrongType = errors.New("WRONGTYPE Operation against a key holding the wrong kind of value")
)

// fakeClient returns a Redis client that no test connects to.
func fakeClient() *redis.Client {
	return redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
}
