// Package sender sends one attempt of a request through a Transport's base
// and keeps what sending teaches: each host's time to response headers,
// for the deadline checks (package deadlines), and each host's pace
// (package pacing). It is given the base, the per-attempt timeout, the
// deadline headers to send, the pacer (nil when pacing is off) and the
// clock. It decides how long an attempt waits for its turn, and whether a
// retry or a hedge fits its request's deadline. It never retries, never
// logs and never calls a hook: it returns what changed (a pacing.Change)
// and how long an attempt waited, for the Transport to report; and it
// never returns both a response and an error.
package sender

import (
	"context"
	"hash/maphash"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/retryhttp/retryhttp/deadline"
	"github.com/retryhttp/retryhttp/internal/config"
	"github.com/retryhttp/retryhttp/internal/conns"
	"github.com/retryhttp/retryhttp/internal/deadlines"
	"github.com/retryhttp/retryhttp/internal/latency"
	"github.com/retryhttp/retryhttp/internal/pacing"
	"github.com/retryhttp/retryhttp/pace"
)

// A Sender sends the attempts of a Transport's requests. Its fields are
// set once, before its first use.
type Sender struct {
	Base           http.RoundTripper
	AttemptTimeout time.Duration // 0: none
	// Answers holds the hosts' times to response headers: the Sender's
	// own table when Records, hedging's otherwise, which records them.
	// The Sender's own records one answer in RecordEvery, drawn at random,
	// of the requests it would send at once (Direct), and every answer of
	// the others; 0 or 1: every answer (in-package tests).
	Answers     *latency.Table
	Records     bool
	RecordEvery uint32
	// Headers are the deadline headers an attempt carries; nil: none.
	Headers []deadline.Format
	// NoFitCheck turns off the check that a retry or a hedge has time to
	// be answered (in-package tests of the root set it).
	NoFitCheck bool
	Pacer      *pacing.Pacer // nil: no pacing
	Pace       config.Pace
	Seed       maphash.Seed // of the partition header's hashes
	Now        func() time.Time
	// PaceChanged is told each change of a host's pacing, with the
	// attempt whose response made it.
	PaceChanged func(a *http.Request, c pacing.Change)
}

// Direct reports whether a may be sent through the base at once, without
// Exchange, with nothing to bound, to observe or to time: no per-attempt
// timeout, no pacing, and no answer time to record (a request without a
// deadline records none, and one with a deadline one time in RecordEvery,
// so that most cost no clock reading).
func (s *Sender) Direct(a *http.Request) bool {
	return s.AttemptTimeout <= 0 && s.Pacer == nil &&
		(!s.Records || !HasDeadline(a.Context()) || s.RecordEvery > 1 && rand.Uint32()%s.RecordEvery != 0)
}

// RecordEvery is how many of the requests sent at once a Transport's own
// table records one answer time of: the median a retry's fit is judged by
// then covers 400 to 800 answers rather than 100 to 200, and is known
// after about 80 (deadlines.Window, deadlines.MinSamples).
const RecordEvery = 4

// Exchange makes one attempt through rt, the base or a transport made from
// it, within the per-attempt timeout. It records the attempt's time to
// response headers when its request has a deadline and the Sender keeps
// its own table, and shows the pacer a response that concerns it: any
// response of a host the pacer knows, and of another a throttle or a
// quota. The send of a request to a host the pacer does not know is timed
// only then, so that pacing costs such a host no clock reading.
func (s *Sender) Exchange(rt http.RoundTripper, a *http.Request) (resp *http.Response, err error) {
	var sent time.Time
	var k pacing.Key
	known := false
	if s.Pacer != nil && s.Pacer.KnowsAny() && s.Pacer.MayKnow(pacing.SlotOf(rawHost(a))) {
		if k = s.Key(a); s.Pacer.Knows(k) {
			known, sent = true, s.Now()
		}
	}
	switch {
	case s.Records && HasDeadline(a.Context()):
		start := latency.Monotonic()
		resp, err = s.timed(rt, a)
		if resp != nil {
			deadlines.Record(s.Answers, a, start)
		}
	default:
		resp, err = s.timed(rt, a)
	}
	if s.Pacer != nil && resp != nil && (known || s.Pacer.Signals(rawHost(a), resp.StatusCode, resp.Header)) {
		now := s.Now()
		if !known {
			k, sent = s.Key(a), now
		}
		if c := s.Pacer.Observe(k, sent, now, resp.StatusCode, resp.Header); c.Event != pacing.None && s.PaceChanged != nil {
			s.PaceChanged(a, c)
		}
	}
	return resp, err
}

// timed sends a through rt within the per-attempt timeout.
func (s *Sender) timed(rt http.RoundTripper, a *http.Request) (*http.Response, error) {
	if s.AttemptTimeout <= 0 {
		return conns.CheckResult(rt.RoundTrip(a))
	}
	return conns.WithTimeout(rt, a, s.AttemptTimeout)
}

// HasDeadline reports whether ctx has a deadline.
func HasDeadline(ctx context.Context) bool {
	_, ok := ctx.Deadline()
	return ok
}

// TimeToSend returns the time left before ctx's deadline for the next
// attempt's deadline headers, and whether the attempt may be sent
// (deadlines.TimeToSend); without deadline headers, 0 and true.
func (s *Sender) TimeToSend(ctx context.Context) (time.Duration, bool) {
	if s.Headers == nil {
		return 0, true
	}
	return deadlines.TimeToSend(ctx, s.Now())
}

// Header returns h, an attempt's header, with left in every deadline
// header (deadlines.Header); h is copied first unless own.
func (s *Sender) Header(h http.Header, own bool, left time.Duration) http.Header {
	return deadlines.Header(h, own, s.Headers, left)
}

// Typical returns the median of the recent times to response headers of
// req's host (deadlines.Typical); 0 without a table.
func (s *Sender) Typical(req *http.Request) time.Duration {
	if s.Answers == nil {
		return 0
	}
	return deadlines.Typical(s.Answers, req)
}

// RetryFits reports whether a retry of the failed attempt a, sent at now
// after delay, would have time to be answered before its deadline
// (deadlines.RetryFits).
func (s *Sender) RetryFits(a *http.Request, now time.Time, delay time.Duration) bool {
	if !HasDeadline(a.Context()) {
		return true
	}
	return deadlines.RetryFits(a.Context(), now, delay, s.Typical(a), !s.NoFitCheck)
}

// HedgeTime returns the time left for a hedge of req to the host of hl,
// and whether the hedge may be sent (deadlines.HedgeTime).
func (s *Sender) HedgeTime(req *http.Request, hl *latency.Host) (time.Duration, bool) {
	return deadlines.HedgeTime(req.Context(), s.Now(), hl, !s.NoFitCheck, s.Headers != nil)
}

// LeftAfter returns the time left before req's deadline once delay has
// passed; 0 when req has no deadline.
func (s *Sender) LeftAfter(req *http.Request, delay time.Duration) time.Duration {
	return deadlines.LeftAfter(req.Context(), s.Now(), delay)
}

// Key returns the key req is paced by: its host, and its partition.
func (s *Sender) Key(req *http.Request) pacing.Key {
	if s.Pace.Store != nil {
		// The fleet names a partition alike in every process.
		return pacing.StableKeyOf(req, s.Pace.PartitionHeader)
	}
	return pacing.KeyOf(req, s.Pace.PartitionHeader, s.Seed)
}

// Paces reports whether req's host is paced now: its attempts wait for
// their turns. False without pacing.
func (s *Sender) Paces(req *http.Request) bool {
	return s.Pacer.Pacing() && s.Pacer.MayKnow(pacing.SlotOf(rawHost(req))) && s.Pacer.Paces(s.Key(req))
}

// rawHost returns req's host as its URL writes it, req.Host when the URL
// has none: what pacing.Pacer.MayKnow is asked.
func rawHost(req *http.Request) string {
	if req.URL != nil && req.URL.Host != "" {
		return req.URL.Host
	}
	return req.Host
}

// FreeTurn takes a turn of req's host that is free at once, and reports
// false when there is none: true when pacing is off or the host is not
// paced.
func (s *Sender) FreeTurn(req *http.Request) bool {
	if !s.Pacer.Pacing() {
		return true
	}
	_, _, ok := s.Pacer.Reserve(s.Key(req), s.Now(), 0)
	return ok
}

// AwaitTurn waits, when req's host is paced, for the turn of an attempt of
// req under ctx, and returns how long it waited. When the turn is further
// off than pace.MaxWait, or than ctx's deadline less the time an answer
// from the host typically takes (at least 1 ms), it waits no more and
// returns a *pace.Error with the wait it would have had; when ctx is done
// first, ctx's error. The attempt is not to be sent then.
func (s *Sender) AwaitTurn(ctx context.Context, req *http.Request) (time.Duration, error) {
	start := s.Now()
	limit := s.Pace.MaxWait
	if dl, ok := ctx.Deadline(); ok {
		// The turn must leave the attempt time to be answered: what an
		// answer from its host typically takes, and at least 1 ms.
		answer := max(s.Typical(req), deadlines.MinTimeLeft)
		limit = max(min(limit, dl.Sub(start)-answer), 0)
	}
	turn, d, ok := s.Pacer.Reserve(s.Key(req), start, limit)
	var waited time.Duration
	for ok && d > 0 {
		if err := Sleep(ctx, turn.Nap(), turn.Woken()); err != nil {
			turn.Release(s.Now())
			return waited, err
		}
		now := s.Now()
		waited = now.Sub(start)
		// A caller woken late (a loaded machine) is held to the limit
		// too, its turn come or not.
		if d = turn.Wait(now); waited+d > limit {
			turn.Release(now)
			ok = false
		}
	}
	if !ok {
		return waited, &pace.Error{Host: req.URL.Host, Wait: waited + d, Allowed: limit}
	}
	return waited, nil
}

// Sleep sleeps for d, until woken is closed (nil: never), or until ctx is
// done, whichever comes first, and returns ctx's error if it is done.
func Sleep(ctx context.Context, d time.Duration, woken <-chan struct{}) error {
	if d <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
	case <-woken:
	}
	return nil
}
