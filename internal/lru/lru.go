// Package lru bounds the per-host tables (the budget's buckets, hedging's
// latency trackers), which make room for a new host by forgetting the host
// least recently used. Recency is counted in insertions: a table's clock
// moves on by one each time it adds a host, and each entry keeps the
// reading of the clock when it was last used. An entry writes that reading
// only when the clock has moved since, so that traffic to the hosts a table
// already knows only reads it.
package lru

import (
	"maps"
	"sync/atomic"
)

// A Clock counts a table's insertions.
type Clock struct{ now atomic.Uint64 }

// A Use is when an entry of a table was last used, by the table's
// clock.
type Use struct{ at atomic.Uint64 }

// Touch marks the entry used now.
func (u *Use) Touch(c *Clock) {
	if now := c.now.Load(); u.at.Load() != now {
		u.at.Store(now)
	}
}

// Insert returns a copy of m with v added under k, which m lacks, v
// marked as the entry most recently used. When m already holds max entries
// or more, the copy leaves out the one least recently used, which it
// returns, with its key, with evicted true. use returns an entry's Use.
func Insert[K comparable, V any](m map[K]V, k K, v V, max int, c *Clock, use func(V) *Use) (next map[K]V, goneKey K, gone V, evicted bool) {
	use(v).at.Store(c.now.Add(1))
	if len(m) >= max {
		var oldest uint64
		for mk, mv := range m {
			if at := use(mv).at.Load(); !evicted || at < oldest {
				goneKey, gone, oldest, evicted = mk, mv, at, true
			}
		}
	}
	next = maps.Clone(m) // copies the map's memory: far cheaper than inserting each entry
	if evicted {
		delete(next, goneKey)
	}
	next[k] = v
	return next, goneKey, gone, evicted
}

// Stamp marks the entry of u as the one most recently inserted, for a
// table that inserts without Insert.
func (c *Clock) Stamp(u *Use) { u.at.Store(c.now.Add(1)) }

// At returns when the entry of u was last used, by its table's clock.
func (u *Use) At() uint64 { return u.at.Load() }
