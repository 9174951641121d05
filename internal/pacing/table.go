package pacing

import (
	"maps"
	"strings"
	"sync/atomic"

	"github.com/retryhttp/retryhttp/internal/lru"
)

// keyShards is how many shards a table's keys are spread over.
const keyShards = 64

// A table holds a Pacer's states by key, in shards, each a map never
// modified once stored: a lookup is an atomic load and a map read, and a
// new key copies only its shard, about 1/64 of the table, so that a new
// partition (a token first seen) costs O(1) allocations however many keys
// the table holds. Inserts are serialised by the Pacer's lock.
type table struct {
	shards [keyShards]atomic.Pointer[map[Key]*state]
	n      atomic.Int64 // keys held
}

// shardOf returns the shard of k: from its partition's hash, which is
// already one, and from a few bytes of its host, which few keys share.
func shardOf(k Key) int {
	h := k.Partition ^ uint64(len(k.Host.Host))
	if n := len(k.Host.Host); n > 0 {
		h ^= uint64(k.Host.Host[n-1])<<8 ^ uint64(k.Host.Host[0])<<16 ^ uint64(k.Host.Host[n/2])<<24
	}
	h ^= h >> 29
	h ^= h >> 11
	return int(h & (keyShards - 1))
}

// get returns the state of k, or nil.
func (t *table) get(k Key) *state {
	if m := t.shards[shardOf(k)].Load(); m != nil {
		return (*m)[k]
	}
	return nil
}

// each calls f with each key and its state, until f returns false.
func (t *table) each(f func(Key, *state) bool) {
	for i := range t.shards {
		if m := t.shards[i].Load(); m != nil {
			for k, st := range *m {
				if !f(k, st) {
					return
				}
			}
		}
	}
}

// insert adds st under k, which t lacks, marked the state most recently
// used by c, in the place of the one least recently used when t holds
// max already, which it returns with its key. The caller holds the
// Pacer's lock.
func (t *table) insert(k Key, st *state, max int, c *lru.Clock) (goneKey Key, gone *state) {
	if int(t.n.Load()) >= max {
		var oldest uint64
		t.each(func(gk Key, g *state) bool {
			if at := g.used.At(); gone == nil || at < oldest {
				goneKey, gone, oldest = gk, g, at
			}
			return true
		})
		if gone != nil {
			s := &t.shards[shardOf(goneKey)]
			next := maps.Clone(*s.Load())
			delete(next, goneKey)
			s.Store(&next)
			t.n.Add(-1)
		}
	}
	c.Stamp(&st.used)
	s := &t.shards[shardOf(k)]
	var next map[Key]*state
	if m := s.Load(); m != nil {
		next = maps.Clone(*m)
	}
	if next == nil {
		next = map[Key]*state{}
	}
	next[k] = st
	s.Store(&next)
	t.n.Add(1)
	return goneKey, gone
}

// hostSlots is how many counters a Pacer's filter of hosts has.
const hostSlots = 1024

// A Slot is a host's counter in a Pacer's filter of hosts (SlotOf).
type Slot uint16

// SlotOf returns the slot of host in a Pacer's filter of hosts: a hash of
// its name without its port, in lower case, so that a request's host as
// its URL writes it and the host of its key, as wire.MakeKey writes it,
// have the same. Every port of a host shares its slot, and letters are
// folded by setting their case bit, which folds a few other bytes alike:
// the filter only ever answers "maybe" more often for them. Eight bytes
// at a time, without a branch on each.
func SlotOf(host string) Slot {
	end := byte(':')
	if len(host) > 0 && host[0] == '[' {
		end = ']' // an IPv6 literal's colons are its own
	}
	if i := strings.IndexByte(host, end); i >= 0 {
		host = host[:i]
	}
	const fold, mul = 0x2020202020202020, 0x9e3779b97f4a7c15
	h := uint64(len(host))
	for ; len(host) >= 8; host = host[8:] {
		v := uint64(host[0]) | uint64(host[1])<<8 | uint64(host[2])<<16 | uint64(host[3])<<24 |
			uint64(host[4])<<32 | uint64(host[5])<<40 | uint64(host[6])<<48 | uint64(host[7])<<56
		h = (h ^ (v | fold)) * mul
	}
	var v uint64
	for i := range len(host) {
		v |= uint64(host[i]|0x20) << (8 * i)
	}
	h = (h ^ v) * mul
	return Slot(h >> (64 - 10)) // hostSlots is 1 << 10
}
