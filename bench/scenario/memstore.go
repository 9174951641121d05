package scenario

import (
	"context"
	"sync"
	"time"

	"github.com/retryhttp/retryhttp/throttle"
)

// memSteps is how many steps a window of adaptive throttling turns in.
const memSteps = 20

// A MemStore is a throttle.Store in memory, as a fleet's processes would
// share one: the counts of each host in the steps of the window, on the
// clock of time.Now (the bubble's, in a synctest bubble), and the latest
// Sent of each.
type MemStore struct {
	mu    sync.Mutex
	hosts map[[2]string]map[int64]*throttle.Counts // by scheme and host, then by step
	sent  map[[2]string]time.Time
}

// NewMemStore returns an empty MemStore.
func NewMemStore() *MemStore {
	return &MemStore{hosts: map[[2]string]map[int64]*throttle.Counts{}, sent: map[[2]string]time.Time{}}
}

// Exchange adds counts to the current step of their hosts, forgetting a
// host's earlier steps when it healed, and returns the sums over the
// window of every host with counts in it.
func (m *MemStore) Exchange(_ context.Context, window time.Duration, counts []throttle.Counts) ([]throttle.Counts, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	step := time.Now().UnixNano() / int64(window/memSteps)
	for _, c := range counts {
		k := [2]string{c.Scheme, c.Host}
		steps := m.hosts[k]
		if steps == nil || c.Healed {
			steps = map[int64]*throttle.Counts{}
			m.hosts[k] = steps
			delete(m.sent, k)
		}
		if c.Sent.After(m.sent[k]) {
			m.sent[k] = c.Sent
		}
		b := steps[step]
		if b == nil {
			b = &throttle.Counts{Scheme: c.Scheme, Host: c.Host}
			steps[step] = b
		}
		b.Attempts += c.Attempts
		b.Accepted += c.Accepted
		b.Refused += c.Refused
	}
	var out []throttle.Counts
	for k, steps := range m.hosts {
		sum := throttle.Counts{Scheme: k[0], Host: k[1], Sent: m.sent[k]}
		for st, b := range steps {
			if st <= step-memSteps {
				delete(steps, st)
				continue
			}
			sum.Attempts += b.Attempts
			sum.Accepted += b.Accepted
			sum.Refused += b.Refused
		}
		if len(steps) == 0 {
			delete(m.hosts, k)
			delete(m.sent, k)
			continue
		}
		out = append(out, sum)
	}
	return out, nil
}
