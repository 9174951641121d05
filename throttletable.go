package retryhttp

import (
	"hash/maphash"
	"iter"
	"net/http"

	"github.com/retryhttp/retryhttp/internal/wire"
)

// A throttleTable maps the destinations of requests, spelled as their
// URLs spell them, to the counts of their hosts, in open addressing with
// the slots at most half full: a lookup costs a hash of the host as written
// and a probe or two, where a map keyed by the normalised destination costs
// three times as much on every request. Spellings of one destination
// (SVC.test, svc.test:80) share its counts.
type throttleTable struct {
	slots []throttleEntry // a power of two of them
	n     int
}

// A throttleEntry is a destination as a request spelled it, and its host's
// counts; h is nil in an empty slot.
type throttleEntry struct {
	scheme, host string
	hash         uint64
	h            *hostThrottle
}

// spelling returns the scheme and host of req as its URL writes them.
func spelling(req *http.Request) (scheme, host string) {
	host = req.URL.Host
	if host == "" {
		host = req.Host
	}
	return req.URL.Scheme, host
}

// lookup returns the counts of the destination spelled scheme and host,
// whose hash is hash, or nil.
func (tb *throttleTable) lookup(scheme, host string, hash uint64) *hostThrottle {
	mask := uint64(len(tb.slots) - 1)
	for i := hash & mask; ; i = (i + 1) & mask {
		e := &tb.slots[i]
		if e.h == nil || (e.hash == hash && e.host == host && e.scheme == scheme) {
			return e.h
		}
	}
}

// newThrottleTable returns a table of entries, which must have distinct
// spellings.
func newThrottleTable(entries []throttleEntry) *throttleTable {
	size := 8
	for size < 2*len(entries) {
		size *= 2
	}
	tb := &throttleTable{slots: make([]throttleEntry, size), n: len(entries)}
	mask := uint64(size - 1)
	for _, e := range entries {
		i := e.hash & mask
		for tb.slots[i].h != nil {
			i = (i + 1) & mask
		}
		tb.slots[i] = e
	}
	return tb
}

// entries returns the entries of tb but those whose counts are drop.
func (tb *throttleTable) entries(drop *hostThrottle) []throttleEntry {
	entries := make([]throttleEntry, 0, tb.n+1)
	for _, e := range tb.slots {
		if e.h != nil && e.h != drop {
			entries = append(entries, e)
		}
	}
	return entries
}

// hash returns the hash of a spelling in th's tables.
func (th *throttling) hash(scheme, host string) uint64 {
	return maphash.String(th.seed, host) + uint64(len(scheme))
}

// host returns the counts of req's destination, making them if it has
// none. When the table is full, the host that failed least recently is
// forgotten first.
func (th *throttling) host(req *http.Request, now int64) *hostThrottle {
	scheme, host := spelling(req)
	return th.hostKey(scheme, host, now, false)
}

// hostKey returns the counts of the destination that scheme and host
// spell, making them if it has none, as host does: calm, if calm is set,
// as a host is until it fails.
func (th *throttling) hostKey(scheme, host string, now int64, calm bool) *hostThrottle {
	hash := th.hash(scheme, host)
	th.mu.Lock()
	defer th.mu.Unlock()
	tb := th.hosts.Load()
	if h := tb.lookup(scheme, host, hash); h != nil {
		return h
	}
	k := wire.MakeKey(scheme, host)
	var h, oldest *hostThrottle
	for _, e := range tb.slots {
		switch {
		case e.h == nil:
		case e.h.key == k:
			h = e.h // another spelling of the destination
		case oldest == nil || e.h.last.Load() < oldest.last.Load():
			oldest = e.h
		}
	}
	if h == nil {
		h = &hostThrottle{key: k, folded: now, calm: calm}
		if !calm {
			h.last.Store(now) // else never failed: the first to make room
		}
	}
	if tb.n < th.maxHosts {
		oldest = nil
	}
	th.hosts.Store(newThrottleTable(append(tb.entries(oldest), throttleEntry{scheme, host, hash, h})))
	return h
}

// all yields each host of the table once, whatever its spellings.
func (tb *throttleTable) all() iter.Seq[*hostThrottle] {
	return func(yield func(*hostThrottle) bool) {
		seen := map[*hostThrottle]bool{}
		for _, e := range tb.slots {
			if e.h == nil || seen[e.h] {
				continue
			}
			seen[e.h] = true
			if !yield(e.h) {
				return
			}
		}
	}
}
