package pace

import (
	"context"
	"sync"
	"time"

	"github.com/retryhttp/retryhttp/internal/config"
)

// Shared makes a Transport pace its hosts together with the other members
// of s: the other Transports of the process that share s, and through a
// Store such as redisbudget.NewPaceStore, the processes of a fleet. What
// one member learns of a host reaches the others: a throttle cuts every
// member's rate at once, a Retry-After or a spent window holds every
// member's turns, and the rate a quota allows (announced or declared) is
// split among the members by what each asks of it.
//
// Sharing never makes a request wait. A Transport exchanges what it knows
// of each host it paces with s 50 times a second, from a goroutine of its
// own that runs while a host is paced; an exchange is cut after 50 ms.
// While exchanges fail (the Store is down, slow, panics or returns what
// cannot be read), a member keeps its last share of each quota for a lease
// of 10 s, then grows it back to the whole, at most doubling a second, so
// that the members never all send the whole quota at once: their own
// throttles then pace each alone. By default a Transport paces alone.
func Shared(s Store) Option {
	if s == nil {
		panic("pace: Shared: nil Store")
	}
	return func(c *config.Pace) { c.Store = s }
}

// A Store shares what the members of a fleet know of the hosts they pace.
// Its methods may be called concurrently.
type Store interface {
	// Exchange records reports, what member knows now of each host it
	// paces, for lease, and returns the fleet's view of every host that
	// a member reported within its lease, at most a bounded number: for
	// each, the sum of the members' Demand, the latest Cut and Hold, the
	// least Quota above 0, and how many Members reported it. A member's
	// reports replace the ones it gave before.
	Exchange(ctx context.Context, member string, lease time.Duration, reports []Report) ([]Report, error)
}

// A Report is what a member knows of one host (or partition of one), or,
// returned by a Store, what the fleet knows of it.
type Report struct {
	// Key names the host, and the partition of it with PartitionHeader,
	// the same in every member: the scheme and host in lower case, and
	// after a "#" a hash of the partition header's values, which are
	// never sent.
	Key string
	// Demand is how many requests a second the member asked turns for:
	// first attempts and retries, sent or not.
	Demand float64
	// Cut is when the member last had a request to the host throttled;
	// zero if it had none.
	Cut time.Time
	// Hold is when the wait a Retry-After, or a spent window, asked of
	// every request to the host ends; zero if none did.
	Hold time.Time
	// Quota is the rate, in requests a second, that the host's quota
	// allows the whole fleet, as its headers announce it or as Quota
	// declared it; 0 when none is known.
	Quota float64
	// Members is how many members reported the host within their lease;
	// it is read only from a Store.
	Members int
}

// NewMemoryStore returns a Store that keeps the reports in memory, for the
// Transports of one process to pace together: give each pace.Shared with
// the same store. It holds the reports of at most 4096 pairs of a member
// and a host; a member's reports are forgotten once their lease ends.
func NewMemoryStore() Store { return &memoryStore{reports: map[memoryKey]memoryReport{}} }

// memoryMax bounds the reports a memory store holds.
const memoryMax = 4096

type memoryKey struct{ member, key string }

type memoryReport struct {
	Report
	until time.Time
}

type memoryStore struct {
	mu      sync.Mutex
	reports map[memoryKey]memoryReport
}

func (m *memoryStore) Exchange(_ context.Context, member string, lease time.Duration, reports []Report) ([]Report, error) {
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range reports {
		k := memoryKey{member, r.Key}
		if _, ok := m.reports[k]; !ok && len(m.reports) >= memoryMax {
			continue
		}
		m.reports[k] = memoryReport{Report: r, until: now.Add(lease)}
	}
	fleet := map[string]*Report{}
	var keys []string
	for k, r := range m.reports {
		if now.After(r.until) {
			delete(m.reports, k)
			continue
		}
		f := fleet[k.key]
		if f == nil {
			f = &Report{Key: k.key}
			fleet[k.key] = f
			keys = append(keys, k.key)
		}
		merge(f, r.Report)
	}
	out := make([]Report, 0, len(keys))
	for _, k := range keys {
		out = append(out, *fleet[k])
	}
	return out, nil
}

// merge adds r, one member's report of a host, to f, the fleet's view of
// it, as a Store does: it sums the demands, keeps the latest cut and hold
// and the least quota above 0, and counts the member.
func merge(f *Report, r Report) {
	f.Demand += max(r.Demand, 0)
	if r.Cut.After(f.Cut) {
		f.Cut = r.Cut
	}
	if r.Hold.After(f.Hold) {
		f.Hold = r.Hold
	}
	if r.Quota > 0 && (f.Quota == 0 || r.Quota < f.Quota) {
		f.Quota = r.Quota
	}
	f.Members++
}
