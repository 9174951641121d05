package evidence

import (
	"context"
	"encoding/binary"
	"errors"
	"hash/maphash"
	"net/http"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/retryhttp/retryhttp/internal/attempt"
	"github.com/retryhttp/retryhttp/internal/wire"
)

// A retry leaves the connection that failed only on evidence that the
// connection is to blame, as outlier detection ejects an upstream (Envoy
// after consecutive 5xx, gRPC's proposal A50 by success rate), not by
// reflex: a new connection costs the server a handshake when it is least
// able to pay for it. Behind a balancer that pins each connection to one
// instance, a connection is an instance; a host (a destination, as the
// budget keys it) is the service behind all of them.
//
// A connection is to blame when it failed before it was seen serving a
// success (a connection to a bad instance fails from its first request), or
// when it failed ConnFailLimit times in a row (an instance that went bad).
// A connection that served and fails now and then is kept: its failures are
// the service's random ones. A failure that ends the connection (an error
// over HTTP/1, one that is not the stream's over HTTP/2, a response that
// closes) leaves it at no cost, and is no evidence against the host.
//
// A host whose connections are all to blame is down, not one of its
// instances: once HostLeaveLimit connections have been left with no
// success at the host since, nor among its last downWindow outcomes (so
// that concurrent failures between successes do not count), retries stay
// on their connections, and another is left only after ProbeGap more
// failures or ProbeInterval since the last one left, whichever comes
// first, as Envoy bounds an ejection in time (max_ejection_time): a client
// pinned to a dead instance tries a new connection within 16 failures or
// 1 s of the host healing, however long the outage; any success at the
// host ends this. Only its addresses that failed are down, though, while a
// base.Dialer knows it another: a connection to a failing address is left,
// and the retry dials another.
//
// The table remembers maxEvidenceHosts hosts, as the budget and the other
// per-host tables do, forgetting the host least recently used. A host
// recorded while the table is full is crowded: its retries stay on a
// connection until ConnFailLimit failures in a row, as if it had served,
// so that a storm over more hosts than the table holds errs on the side of
// staying, as every peer does, never on dialling.
//
// Only the hosts with a record have their attempts traced (traces), unless
// the Transport reports attempts to hooks or a log: a success at a host
// that did not fail lately costs nothing. The retry after a failed attempt
// that was not traced leaves its connection, unknown, as one never seen
// serving is left (but stays on it while the table is crowded), and the
// host's record starts, so that its retries are traced.
const (
	ConnFailLimit    = 4
	probationLimit   = 2 // failures in turn of a connection on probation
	HostLeaveLimit   = 3
	ProbeGap         = 16
	ProbeInterval    = time.Second
	downWindow       = 32  // outcomes, at most 64
	calmLimit        = 100 // successes in a row after which a host's record is dropped
	maxEvidenceHosts = 1024
	maxEvidenceConns = 128  // per host
	servedSlots      = 1024 // a power of two
	filterSlots      = 4096 // a power of two
)

// Evidence is what a Transport has seen of the connections its
// attempts used: which served a success, in a table without locks, and,
// for the hosts that failed lately, a bounded table of their records,
// empty while nothing fails.
//
// It also retires the connections it leaves without making others
// single-use (pend, got, admit).
type Evidence struct {
	live    atomic.Int32  // hosts with a record
	seq     atomic.Uint64 // counts the connections traced attempts got, in order
	pending atomic.Int32  // connections left that the next attempt to get them marks
	gates   atomic.Int32  // hosts whose HTTP/2 connection is being replaced
	served  servedConns
	// filter counts the hosts with a record by a hash of their name, so
	// that traces answers without the lock.
	filter [filterSlots]atomic.Int32
	now    func() time.Time
	// direct reports that the base is an *http.Transport itself, whose
	// RoundTrip returns only once its own round trip has: only then may a
	// trace's hooks be pooled (Trace.End).
	direct bool

	mu    sync.Mutex
	hosts map[wire.HostKey]*hostEvidence
	clock uint64 // counts the uses of host records, for eviction
}

// hostEvidence is the record of one host.
type hostEvidence struct {
	conns   map[connKey]*connRecord
	left    int              // connections left since the host's last success
	failing []netip.AddrPort // addresses of the connections left since then
	recent  uint64           // its last outcomes, the latest in bit 0: 1 for a success
	since   int              // failures since the last one left, once left reached HostLeaveLimit
	leftAt  time.Time        // when the last connection was left
	calm    int              // successes since the last failure
	pending int              // of its connections, those pending a mark
	used    uint64           // the table's clock when last used
	crowded bool             // recorded while the table was full: its connections count as served
	// untraced reports that the record started with a failure not
	// traced; suspects counts the failures not traced over HTTP/1
	// whose connection no traced failure was taken for yet, and suspect2
	// says so of one over HTTP/2: the host's requests share one HTTP/2
	// connection, and its failures together are one piece of evidence.
	untraced bool
	suspects int
	suspect2 bool
	// untracedLeft counts the connections failures not traced left
	// since the host's last success, those of the failure that started
	// the record aside: at most HostLeaveLimit.
	untracedLeft int
	taken2       bool // a traced failure was taken for the HTTP/2 one: later ones were sent with it

	// The replacement of a retired HTTP/2 connection: attempts wait while
	// one (probing) has not got its connection.
	replacing, probing bool
	wake               chan struct{} // closed when either changes; nil when nobody waits
	probeAt            time.Time     // when the last turn was given
	replaced           time.Time     // when the last replacement began or ended
	dialTook           time.Duration // how long the last turn took to get a connection; 0 until known
}

// connRecord is the record of one connection.
type connRecord struct {
	ok bool // seen serving a success
	// probation is set on a connection a turn got (Evidence.got)
	// until that turn's attempt ends on it: it counts as one that served
	// for every other attempt's failure.
	probation bool
	counted   uint64 // Evidence.seq when its last failure counted
	fails     int    // failures in a row
	left      bool   // retries keep away from it
	pending   bool   // left while pooled: the next attempt to get it marks it
}

// A connKey identifies a connection by its two ends, which no other open
// connection shares. A key outlives its connection only in a record, which
// a port used again within its life can only make retired earlier.
type connKey struct{ local, remote netip.AddrPort }

// servedConns remembers which connections served a success: a slot per
// hash of a connection's key, which a connection whose hash falls in the
// same slot overwrites. A connection forgotten so is taken for one that
// never served: its first failure leaves it, a connection's cost.
type servedConns struct {
	slots [servedSlots]atomic.Uint64 // a key's hash, never 0; 0 when empty
}

// hash returns a hash of k, never 0: its addresses and ports mixed by
// SplitMix64's finaliser.
func (k connKey) hash() uint64 {
	l, r := k.local.Addr().As16(), k.remote.Addr().As16()
	h := binary.LittleEndian.Uint64(l[8:]) ^ binary.LittleEndian.Uint64(r[8:])*0x9e3779b97f4a7c15 ^
		binary.LittleEndian.Uint64(l[:8])*0xc2b2ae3d27d4eb4f ^ binary.LittleEndian.Uint64(r[:8]) ^
		uint64(k.local.Port())<<32 ^ uint64(k.remote.Port())
	h = (h ^ h>>30) * 0xbf58476d1ce4e5b9
	h = (h ^ h>>27) * 0x94d049bb133111eb
	return h ^ h>>31 | 1
}

// add remembers that k served.
func (s *servedConns) add(k connKey) {
	h := k.hash()
	if slot := &s.slots[h&(servedSlots-1)]; slot.Load() != h {
		slot.Store(h)
	}
}

// has reports whether k served, as far as s remembers.
func (s *servedConns) has(k connKey) bool {
	h := k.hash()
	return s.slots[h&(servedSlots-1)].Load() == h
}

// New returns an empty table whose clock is now. pool reports that the
// base is done with an attempt's hooks when its RoundTrip returns, as an
// *http.Transport is: only then do traces pool their hooks. A base that
// only unwraps to one may return before the round trip it started inside
// has called them (a timeout of its own, say), so each of its attempts has
// hooks of its own, which no other attempt can reach.
func New(now func() time.Time, pool bool) *Evidence {
	return &Evidence{hosts: make(map[wire.HostKey]*hostEvidence), now: now, direct: pool}
}

// hostSeed seeds the hash of the filter of hosts with a record.
var hostSeed = maphash.MakeSeed()

// slot returns k's counter in the filter.
func (e *Evidence) slot(k wire.HostKey) *atomic.Int32 {
	return &e.filter[maphash.String(hostSeed, k.Host)&(filterSlots-1)]
}

// Traces reports whether the attempts of req are to be traced: its host
// has a record (or, rarely, shares its hash with one that has).
func (e *Evidence) Traces(req *http.Request) bool {
	return e != nil && e.live.Load() > 0 && e.slot(wire.RequestKey(req)).Load() > 0
}

// FailedUntraced records that an attempt of req that was not traced failed
// in a way that may be its connection's doing, and reports whether its
// retry should leave the connection, which is unknown: it does, as it
// would leave one never seen serving, unless the table is crowded. The
// host's record starts, so that its next attempts are traced.
//
// A record that starts so does not know which of the host's connections
// served: they did, untraced, but for those that failed untraced, which
// may still be pooled (a response without a body over HTTP/1 leaves its
// connection pooled, and so does any over HTTP/2). A traced failure on a
// connection used before, of which the record knows nothing (every failure
// it saw is in it: see failedLast), is taken for one of those while any is
// unaccounted for, and otherwise for one on a connection that served.
//
// It also reports whether the failure started the record (first).
func (e *Evidence) FailedUntraced(req *http.Request, multiplexed bool) (leave, first bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	h, created := e.host(wire.RequestKey(req))
	if created {
		h.untraced = true
	}
	switch {
	case multiplexed:
		h.suspect2 = !h.taken2
	case h.suspects < maxEvidenceConns:
		h.suspects++
	}
	h.calm = 0
	h.recent <<= 1
	if h.crowded {
		return false, created
	}
	if created {
		// Only the failure that starts the record counts towards the
		// host's being down: the others were sent with it, before it.
		h.left++
		h.since, h.leftAt = 0, e.now()
		return true, created
	}
	// The others leave their connections too, but no more than
	// HostLeaveLimit of them: a host whose connections all fail at once is
	// down, and dialling for each failure would only replace them.
	if h.untracedLeft >= HostLeaveLimit {
		return false, created
	}
	h.untracedLeft++
	return true, created
}

// Failed records that the attempt traced by p failed, with resp or err,
// in a way that a retry is about to follow and that may be its
// connection's doing (a 5xx, or an error), and reports whether the retry
// should leave the connection.
func (e *Evidence) Failed(p *Trace, resp *http.Response, err error) bool {
	if e == nil {
		return false
	}
	key, ok := p.connKey()
	if !ok {
		return false // no connection, or none this table can tell apart
	}
	h2 := p.multiplexed()
	served := err != nil && resp != nil || e.served.has(key) // a body fails after a response
	// Leaving costs nothing when the connection is not to be reused: an
	// error over HTTP/1 ends it, and over HTTP/2 one that is not the
	// stream's; a response may say it closes.
	whole := err != nil && (!h2 || connectionError(err)) || resp != nil && resp.Close
	host := p.host()
	e.mu.Lock()
	h, created := e.host(host)
	if created && served {
		h.recent = 1 // the host served before
	}
	h.calm = 0
	h.recent <<= 1
	c := h.conns[key]
	if c == nil {
		ok, c2probation, suspected := served, false, false
		if !ok && h.untraced && p.wasReused() {
			switch {
			case h2 && h.suspect2:
				// The one HTTP/2 connection failed untraced before: once
				// more, in turn, and it is left (probation), for the
				// attempts in flight on it with this one fail together.
				h.suspect2, h.taken2 = false, true
				c2probation = true
			case !h2 && h.suspects > 0:
				h.suspects--
				suspected = true
			default:
				ok = true // it served, untraced, before the record started
			}
		}
		c = &connRecord{ok: ok, probation: c2probation}
		if suspected && h.crowded {
			// It is taken for the connection of the failure not traced
			// that started the record: that one counts towards its
			// limit, as a failure in a row.
			c.fails = 1
		}
		if !ok && !p.wasReused() && attempt.Number(p) == 1 && (h.replacing || e.now().Sub(h.replaced) < ProbeInterval) {
			// A first attempt that failed on a connection of its own,
			// dialled as the host's was being replaced (an attempt in
			// flight then finds none to share): the request failed, as
			// the host's others did, and says nothing yet of the
			// connection.
			c.probation = true
		}
		h.add(key, c)
	}
	if p.probed() {
		c.probation = false
	}
	if seq := p.gotSeq(); seq == 0 || seq > c.counted {
		// A failure counts once its attempt got the connection after the
		// last one counted was seen: attempts in flight together on it
		// fail together, as one piece of evidence.
		c.fails++
		c.counted = e.seq.Load()
	}
	var leave bool
	switch {
	case c.left:
		e.mu.Unlock()
		return true
	case whole:
		leave = true
	case c.fails < c.limit(h.crowded):
	case h.left < HostLeaveLimit, h.recent&(1<<downWindow-1) != 0, p.elsewhere(h.failing, key.remote):
		leave = true
	default:
		h.since++
		leave = h.since >= ProbeGap || e.now().Sub(h.leftAt) >= ProbeInterval
	}
	if leave {
		c.left = true
		if !whole {
			h.left++
			h.since = 0
			h.leftAt = e.now()
			if !slices.Contains(h.failing, key.remote) && len(h.failing) < maxEvidenceConns {
				h.failing = append(h.failing, key.remote)
			}
		}
		if h2 {
			if !whole {
				e.pend(h, c)
			}
			if !h.replacing {
				h.replacing, h.replaced = true, e.now()
				e.gates.Add(1)
			}
		}
	}
	e.mu.Unlock()
	if leave && !h2 && err == nil && !resp.Close && resp.Body == http.NoBody && !p.retire(resp) {
		// net/http pooled the connection before the Transport saw the
		// response, and it could not be closed.
		e.mu.Lock()
		if h := e.hosts[host]; h != nil {
			if c := h.conns[key]; c != nil {
				e.pend(h, c)
			}
		}
		e.mu.Unlock()
	}
	return leave
}

// FailedLast records that the attempt traced by p, the last of its
// request, failed with resp or err in a way that may be its connection's
// doing: no retry follows, so nothing leaves, but the connection's record
// counts the failure, as the host's does; an attempt not traced (p nil)
// starts its host's record, so that its next attempts are traced.
func (e *Evidence) FailedLast(req *http.Request, p *Trace, resp *http.Response, err error) {
	if e == nil {
		return
	}
	key, ok := p.connKey()
	e.mu.Lock()
	defer e.mu.Unlock()
	h, created := e.host(wire.RequestKey(req))
	if created && p == nil {
		h.untraced = true
	}
	h.calm = 0
	h.recent <<= 1
	if !ok {
		return
	}
	served := err != nil && resp != nil || e.served.has(key)
	if c := h.conns[key]; c != nil {
		c.fails++
		return
	}
	h.add(key, &connRecord{ok: served, fails: 1})
}

// connectionError reports whether err, an HTTP/2 attempt's, ended its
// connection rather than its stream: no stream reset, no timeout, no
// cancellation.
func connectionError(err error) bool {
	if _, stream := wire.H2StreamErrorCode(err); stream {
		return false
	}
	return !wire.IsTimeout(err) && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

// Succeeded records that the attempt traced by p succeeded: its host
// serves, and so does its connection.
func (e *Evidence) Succeeded(p *Trace) {
	if e == nil || p == nil {
		return
	}
	key, ok := p.connKey()
	if !ok {
		return
	}
	e.served.add(key)
	if e.live.Load() == 0 {
		return
	}
	host := p.host()
	e.mu.Lock()
	defer e.mu.Unlock()
	h := e.hosts[host]
	if h == nil {
		return
	}
	h.left, h.since, h.failing, h.untracedLeft = 0, 0, h.failing[:0], 0
	h.recent = h.recent<<1 | 1
	if c := h.conns[key]; c != nil {
		c.ok, c.fails = true, 0
		if p.probed() {
			c.probation = false
		}
	} else {
		h.add(key, &connRecord{ok: true})
	}
	if h.calm++; h.calm >= calmLimit {
		e.drop(host, h)
	}
}

// host returns the record of k, made (and reported so) if there was none.
func (e *Evidence) host(k wire.HostKey) (*hostEvidence, bool) {
	e.clock++
	if h := e.hosts[k]; h != nil {
		h.used = e.clock
		return h, false
	}
	crowded := len(e.hosts) >= maxEvidenceHosts
	if crowded {
		var oldest wire.HostKey
		var old *hostEvidence
		for ok, oh := range e.hosts {
			if old == nil || oh.used < old.used {
				oldest, old = ok, oh
			}
		}
		e.drop(oldest, old)
	}
	h := &hostEvidence{conns: make(map[connKey]*connRecord), used: e.clock, crowded: crowded}
	e.hosts[k] = h
	e.slot(k).Add(1)
	e.live.Add(1)
	return h, true
}

// drop forgets h, the record of k, and lets anyone waiting on it go.
func (e *Evidence) drop(k wire.HostKey, h *hostEvidence) {
	delete(e.hosts, k)
	e.slot(k).Add(-1)
	e.live.Add(-1)
	e.pending.Add(-int32(h.pending))
	if h.replacing {
		e.gates.Add(-1)
	}
	h.wakeAll()
}

// limit returns how many failures in a row make c one to leave:
// ConnFailLimit when it was seen serving or its host is crowded, and
// otherwise 1, as a connection to a bad instance fails from the first (a
// connection net/http dialled for a request that took another one
// meanwhile is reused by the next without ever having served).
func (c *connRecord) limit(crowded bool) int {
	switch {
	case c.ok || crowded:
		return ConnFailLimit
	case c.probation:
		return probationLimit
	}
	return 1
}

// add records c under k, forgetting a connection not pending a mark when
// the host has too many.
func (h *hostEvidence) add(k connKey, c *connRecord) {
	if len(h.conns) >= maxEvidenceConns {
		for ok, oc := range h.conns {
			if !oc.pending {
				delete(h.conns, ok)
				break
			}
		}
	}
	h.conns[k] = c
}

// InstanceFailure reports whether resp, an attempt about to be retried,
// failed in a way that may belong to the instance of the service that
// served it (a 5xx), or to its connection (misdirected: a 421, which
// always leaves it), so that the retry may have to go elsewhere: behind a
// balancer that pins each connection to one instance (a Kubernetes
// Service, a network load balancer) a retry sent down the same connection
// meets the same instance. A throttled response (429, 503 with
// Retry-After) keeps its connection: the server answered as it meant to
// and asked for less load, not for another connection, and its quota is
// seldom the instance's alone.
func InstanceFailure(resp *http.Response, misdirected, throttle bool) bool {
	return resp != nil && (misdirected || resp.StatusCode >= 500 && !throttle)
}

// Leave decides whether the retry after the attempt of req traced by p
// (nil: not traced), which failed with resp or err, leaves its connection:
// an attempt that failed (failure: an error, or InstanceFailure) on a
// connection traced leaves it as Failed says, and on one not traced as
// FailedUntraced says, since there is no evidence to weigh. It also
// reports whether the retry should dial a connection of its own (fresh):
// the first failure of an untraced host over HTTP/2, whose connection
// carries others' streams and stays pooled, when canFresh says the base
// can dial one.
func (e *Evidence) Leave(req *http.Request, p *Trace, resp *http.Response, err error, failure bool, canFresh func() bool) (leave, fresh bool) {
	leave = failure && (p == nil || e.Failed(p, resp, err))
	if !failure || p != nil || e == nil {
		return leave, false
	}
	// Over HTTP/2, or maybe (an error over TLS).
	multiplexed := resp != nil && resp.ProtoMajor == 2 || resp == nil && req.URL.Scheme == "https"
	leave, first := e.FailedUntraced(req, multiplexed)
	fresh = leave && first && resp != nil && resp.ProtoMajor == 2 && canFresh()
	return leave || err != nil, fresh
}
