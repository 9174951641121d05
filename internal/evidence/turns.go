package evidence

import (
	"net/http"
	"time"

	"github.com/retryhttp/retryhttp/internal/wire"

	"github.com/retryhttp/retryhttp/internal/guard"
)

// A connection the Transport leaves is retired without making others
// single-use. An HTTP/2 connection (or an HTTP/1 one that a response
// without a body gave back to the pool) stays pooled, and net/http lets no
// RoundTripper close it without cutting the other requests it carries: the
// next attempt to get it marks it not to be reused (Request.Close, which
// net/http reads after GotConn), as only that attempt can. Until then, and
// until a new connection is pooled, every request to its host finds no
// connection to reuse and net/http dials one for each: while a host's
// HTTP/2 connection is being replaced, its attempts take turns, one at a
// time, until one gets a pooled connection that is not retired, so that
// concurrent retries share one new connection.

// pend makes c, a connection of h that stays pooled, pending a mark.
func (e *Evidence) pend(h *hostEvidence, c *connRecord) {
	if !c.pending {
		c.pending = true
		h.pending++
		e.pending.Add(1)
	}
}

// Admit reports whether the attempt a may be sent at once, or, when its
// host's HTTP/2 connection is being replaced, waits for its turn, one
// attempt at a time, and reports that it holds the turn (turn). It returns
// the error of a's context when that ends first.
//
// No attempt waits for another's connection longer than a dial of its own
// would take: an attempt that has waited the host's patience since the
// turn was last given takes a turn too, so that a handshake that stalls
// holds the others back by the patience at most, and a new turn is given
// once a patience, not once a stalled dial, while the connection is not
// replaced.
func (e *Evidence) Admit(a *http.Request) (turn bool, err error) {
	if e == nil || e.gates.Load() == 0 {
		return false, nil
	}
	ctx, host := a.Context(), wire.RequestKey(a)
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	e.mu.Lock()
	for {
		h := e.hosts[host]
		if h == nil || !h.replacing {
			e.mu.Unlock()
			return false, nil
		}
		now := e.now()
		waited := now.Sub(h.probeAt)
		if !h.probing || waited >= h.patience() {
			h.probing, h.probeAt = true, now
			e.mu.Unlock()
			return true, nil
		}
		if h.wake == nil {
			h.wake = make(chan struct{})
		}
		wake, left := h.wake, h.patience()-waited
		e.mu.Unlock()
		if timer == nil {
			timer = time.NewTimer(left)
		} else {
			timer.Reset(left)
		}
		select {
		case <-wake:
		case <-timer.C:
		case <-ctx.Done():
			return false, ctx.Err()
		}
		e.mu.Lock()
	}
}

// The patience of a host's attempts waiting for its turn: twice the time
// the last turn took to get a new connection (a dial and a handshake),
// within minPatience and maxPatience, and defaultPatience until a turn has.
const (
	minPatience     = 10 * time.Millisecond
	defaultPatience = 100 * time.Millisecond
	maxPatience     = time.Second
)

// patience returns how long an attempt waits for h's turn, from the time
// the turn was last given.
func (h *hostEvidence) patience() time.Duration {
	if h.dialTook == 0 {
		return defaultPatience
	}
	return min(max(2*h.dialTook, minPatience), maxPatience)
}

// got learns that the attempt traced by p got its connection. It reports
// whether the attempt is to mark the connection not to be reused, which
// it can (markable) when net/http sends the very request p traces: one
// without a body. For an attempt that holds its host's turn, it also
// reports whether the replacement is over: the connection is neither
// retired nor new, so that net/http has it pooled for every attempt.
func (e *Evidence) got(p *Trace, turn, markable bool) (mark, over bool) {
	key, ok := p.connKey()
	reused := p.wasReused()
	host := p.host()
	e.mu.Lock()
	defer e.mu.Unlock()
	h := e.hosts[host]
	if h == nil {
		return false, turn
	}
	var c *connRecord
	if ok {
		c = h.conns[key]
	}
	if markable && c != nil && c.pending {
		c.pending = false
		h.pending--
		e.pending.Add(-1)
		mark = true
	}
	if turn && !reused {
		// A new connection: the turn's dial and handshake took this long.
		h.dialTook = max(e.now().Sub(h.probeAt), 1)
		if ok && c == nil {
			// The host's next connection, on probation until the turn's
			// own attempt ends on it: the attempts sent on it meanwhile
			// (first attempts of requests that fail as the host fails)
			// say nothing of it, and must not have it replaced again
			// while the others are still moving to it.
			h.add(key, &connRecord{probation: true})
			p.mu.Lock()
			p.probe = true
			p.mu.Unlock()
		}
	}
	if turn && reused && (c == nil || !c.left) {
		if h.replacing {
			h.replacing, h.replaced = false, e.now()
			e.gates.Add(-1)
		}
		h.probing = false
		h.wakeAll()
		return mark, true
	}
	return mark, false
}

// pass ends the turn an attempt to host held, once its headers are
// written (a mark it carried is on its connection) or it has ended, and
// lets the next attempt go.
func (e *Evidence) pass(host wire.HostKey) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if h := e.hosts[host]; h != nil && h.probing {
		h.probing = false
		h.wakeAll()
	}
}

// wakeAll lets every attempt waiting on h check again.
func (h *hostEvidence) wakeAll() {
	if h.wake != nil {
		close(h.wake)
		h.wake = nil
	}
}

// getConn is the GetConn hook of the attempt p traces. net/http calls it
// as a send of the attempt gets a pooled HTTP/2 connection, under its
// pool's lock, and otherwise as it looks for a connection in its own pool
// (Transport.getConn), where it dials one for the send when it finds none.
// An attempt that admit let go before its host's HTTP/2 connection was
// left may come there only after the connection was marked; and an
// HTTP/2 connection marked not to be reused refuses the streams of the
// requests that got it (GotConn) but had not opened them yet, which
// net/http sends again, by way of its own pool. Each of these would dial a
// connection of its own, all at once: while the host's connection is being
// replaced, each looks for one only in its turn, as admit gives turns, and
// holds it until the send is written or the attempt ends. A send of an
// abandoned attempt is one net/http makes again: it is stopped.
func (p *Trace) getConn(string) {
	if p.abandoned.Load() {
		p.stopResend(nil)
		return
	}
	ev := p.ev
	if ev == nil || ev.gates.Load() == 0 {
		return
	}
	if guard.HookCaller() != guard.HTTP1GetConn {
		return
	}
	p.mu.Lock()
	turn := p.turn
	p.mu.Unlock()
	if turn {
		return
	}
	if turn, _ := ev.Admit(p.req); turn {
		p.mu.Lock()
		p.turn = true
		p.mu.Unlock()
		p.late.Store(true)
	}
}
