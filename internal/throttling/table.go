package throttling

import (
	"hash/maphash"
	"iter"
	"net/http"

	"github.com/retryhttp/retryhttp/internal/wire"
)

// A table maps the destinations of requests, spelled as their
// URLs spell them, to the counts of their hosts, in open addressing with
// the slots at most half full: a lookup costs a hash of the host as written
// and a probe or two, where a map keyed by the normalised destination costs
// three times as much on every request. Spellings of one destination
// (SVC.test, svc.test:80) share its counts.
type table struct {
	slots []entry // a power of two of them
	n     int
}

// An entry is a destination as a request spelled it, and its host's
// counts; h is nil in an empty slot. alias is set on a spelling of a host
// that another entry spelled first.
type entry struct {
	scheme, host string
	hash         uint64
	h            *Host
	alias        bool
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
func (tb *table) lookup(scheme, host string, hash uint64) *Host {
	mask := uint64(len(tb.slots) - 1)
	for i := hash & mask; ; i = (i + 1) & mask {
		e := &tb.slots[i]
		if e.h == nil || (e.hash == hash && e.host == host && e.scheme == scheme) {
			return e.h
		}
	}
}

// newTable returns a table of entries, which must have distinct
// spellings.
func newTable(entries []entry) *table {
	size := 8
	for size < 2*len(entries) {
		size *= 2
	}
	tb := &table{slots: make([]entry, size), n: len(entries)}
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
func (tb *table) entries(drop *Host) []entry {
	entries := make([]entry, 0, tb.n+1)
	for _, e := range tb.slots {
		if e.h != nil && e.h != drop {
			entries = append(entries, e)
		}
	}
	return entries
}

// hash returns the hash of a spelling in th's tables.
func (th *Throttler) hash(scheme, host string) uint64 {
	return maphash.String(th.seed, host) + uint64(len(scheme))
}

// hostKey returns the counts of the destination that scheme and host
// spell, making them if it has none: calm, if calm is set, as a host is
// until it fails. When the table is full, the host that failed least
// recently is forgotten first.
func (th *Throttler) hostKey(scheme, host string, now int64, calm bool) *Host {
	hash := th.hash(scheme, host)
	th.mu.Lock()
	defer th.mu.Unlock()
	tb := th.hosts.Load()
	if h := tb.lookup(scheme, host, hash); h != nil {
		return h
	}
	k := wire.MakeKey(scheme, host)
	var h, oldest *Host
	alias := false
	for _, e := range tb.slots {
		switch {
		case e.h == nil:
		case e.h.key == k:
			h, alias = e.h, true // another spelling of the destination
		case oldest == nil || e.h.last.Load() < oldest.last.Load():
			oldest = e.h
		}
	}
	if h == nil {
		h = &Host{key: k, folded: now, calm: calm}
		if !calm {
			h.last.Store(now) // else never failed: the first to make room
		}
	}
	if tb.n < th.maxHosts {
		oldest = nil
	}
	th.hosts.Store(newTable(append(tb.entries(oldest), entry{scheme, host, hash, h, alias})))
	return h
}

// adopt makes the counts of the destinations keys, which the fleet counts
// failures of and this process has not requested, as many as the table
// has room for, and never more than half of it, in one new table: a
// fleet's hosts never push this process's own out, and any number of them
// costs what half a table of them does. It returns the counts made, by
// destination.
func (th *Throttler) adopt(keys []wire.HostKey, now int64) map[wire.HostKey]*Host {
	th.mu.Lock()
	defer th.mu.Unlock()
	tb := th.hosts.Load()
	if len(keys) == 0 || tb.n >= th.maxHosts {
		return nil
	}
	adopted := 0
	for h := range tb.all() {
		if h.adopted {
			adopted++
		}
	}
	room := min(th.maxHosts-tb.n, th.maxHosts/2-adopted)
	if room <= 0 {
		return nil
	}
	known := make(map[wire.HostKey]bool, tb.n)
	for h := range tb.all() {
		known[h.key] = true
	}
	entries := tb.entries(nil)
	made := make(map[wire.HostKey]*Host, min(room, len(keys)))
	for _, k := range keys {
		if len(made) == room {
			break
		}
		if known[k] {
			continue
		}
		h := &Host{key: k, folded: now, adopted: true}
		h.last.Store(now)
		entries = append(entries, entry{k.Scheme, k.Host, th.hash(k.Scheme, k.Host), h, false})
		made[k] = h
	}
	if len(made) > 0 {
		th.hosts.Store(newTable(entries))
	}
	return made
}

// all yields each host of the table once, whatever its spellings.
func (tb *table) all() iter.Seq[*Host] {
	return func(yield func(*Host) bool) {
		for _, e := range tb.slots {
			if e.h != nil && !e.alias && !yield(e.h) {
				return
			}
		}
	}
}
