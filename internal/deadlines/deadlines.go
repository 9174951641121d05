// Package deadlines decides what a request's deadline allows. Given the
// deadline in the request's context, the time now, the wait before an
// attempt and the time its host typically takes to answer, it says how
// much time will be left, whether an attempt may still be sent (never with
// less than MinTimeLeft), whether a retry or a hedge can finish in time,
// and what the deadline headers of an attempt say. A first attempt is
// always the caller's choice: only retries and hedges are refused for lack
// of time. It never sleeps, never sends and never logs.
package deadlines

import (
	"context"
	"maps"
	"math"
	"net/http"
	"time"
	"unsafe"

	"github.com/retryhttp/retryhttp/deadline"
	"github.com/retryhttp/retryhttp/internal/deadlinefmt"
	"github.com/retryhttp/retryhttp/internal/latency"
	"github.com/retryhttp/retryhttp/internal/wire"
)

// MinTimeLeft is the least time left before its deadline with which an
// attempt is sent, or a retry planned: no answer crosses a network in less,
// and the millisecond formats cannot say less.
const MinTimeLeft = time.Millisecond

// Before each retry and each hedge of a request with a deadline, the
// Transport asks whether the attempt can finish: whether the time that
// will be left when it is sent is at least what an answer from its host
// typically takes. An attempt that cannot is not sent: it would spend a
// budget token, a connection and the host's work on an answer no one will
// read.
//
// What an answer typically takes is the median of the host's recent times
// to response headers, whatever their status. At the median, an attempt is
// as likely to finish as not: with less time than that it more likely than
// not is cut off, and the token, the connection (an HTTP/1 request cut off
// takes its connection with it) and the host's work are spent for nothing
// more often than not. A higher quantile would refuse attempts that would
// mostly finish, which is worse than sending the few that will not; a lower
// one sends attempts that mostly will not.
const (
	quantile = 0.5
	// MinSamples is how many answers of a host must be known before
	// their median is trusted: with 20, the median lies between the 30th
	// and the 70th percentile 19 times in 20. Until then, an attempt needs
	// only MinTimeLeft.
	MinSamples = 20
	// Window is how many answer times a window of the Transport's own
	// table holds, when hedging does not keep them: the median covers the
	// last 100 to 200 answer times recorded (of one request in
	// sender.RecordEvery, for most), and follows a host that turns slow
	// within 200.
	Window = 100
	// Hosts bounds the hosts whose answer times the Transport's own table
	// keeps, as the budget bounds its buckets.
	Hosts = 1024
)

// Typical returns the median of the recent times to response headers of
// the host of req in table, or 0 while fewer than MinSamples are known.
func Typical(table *latency.Table, req *http.Request) time.Duration {
	hl := table.Lookup(wire.RequestKey(req))
	if hl == nil {
		return 0
	}
	return hl.Quantile(quantile, MinSamples)
}

// Record adds to table the time to response headers of attempt a, sent
// at start (monotonic).
func Record(table *latency.Table, a *http.Request, start time.Duration) {
	table.Host(wire.RequestKey(a)).Add(latency.Monotonic()-start, Window)
}

// LeftAfter returns the time that will be left before ctx's deadline once
// delay has passed from now, 0 when ctx has no deadline.
func LeftAfter(ctx context.Context, now time.Time, delay time.Duration) time.Duration {
	d, ok := ctx.Deadline()
	if !ok {
		return 0
	}
	return lessDelay(d.Sub(now), delay)
}

// RetryFits reports whether a retry whose context is ctx, sent delay after
// now, would have time to finish before its deadline: at least typical
// left, and at least MinTimeLeft; with check off, any time at all. A
// request without a deadline always has time.
func RetryFits(ctx context.Context, now time.Time, delay, typical time.Duration, check bool) bool {
	d, ok := ctx.Deadline()
	if !ok {
		return true
	}
	left := lessDelay(d.Sub(now), delay)
	if !check {
		return left > 0
	}
	return left >= max(typical, MinTimeLeft)
}

// HedgeTime returns the time left at now for a hedge whose context is ctx
// to the host of hl, for its deadline headers (0 without them: headers is
// false), and whether the hedge may be sent: it has at least the host's
// typical answer time left, and at least MinTimeLeft.
func HedgeTime(ctx context.Context, now time.Time, hl *latency.Host, check, headers bool) (time.Duration, bool) {
	d, ok := ctx.Deadline()
	if !ok {
		return 0, true
	}
	left := d.Sub(now)
	var need time.Duration
	switch {
	case check:
		need = max(hl.Quantile(quantile, MinSamples), MinTimeLeft)
	case headers:
		need = MinTimeLeft
	}
	if left < need {
		return left, false
	}
	if !headers {
		left = 0 // no header carries it
	}
	return left, true
}

// TimeToSend returns the time left at now before ctx's deadline, for an
// attempt's deadline headers, and whether the attempt may be sent: not
// with less than MinTimeLeft. Without a deadline it returns 0 and true.
func TimeToSend(ctx context.Context, now time.Time) (time.Duration, bool) {
	d, ok := ctx.Deadline()
	if !ok {
		return 0, true
	}
	left := d.Sub(now)
	return left, left >= MinTimeLeft
}

// Header returns h, an attempt's header, with left, the time left, in
// every one of formats: h itself when own, the attempt's own header
// already, or else a copy of it, since h is then the caller's
// (Stamp.Header, with a Stamp of its own).
func Header(h http.Header, own bool, formats []deadline.Format, left time.Duration) http.Header {
	return new(Stamp).Header(h, own, formats, left)
}

// A Stamp holds the values of an attempt's deadline headers, so that the
// struct of the attempt that holds it holds them too. It is used once.
type Stamp struct {
	buf  [maxFormats * 24]byte
	vals [maxFormats]string
}

// maxFormats is how many formats a Stamp holds: every one there is.
const maxFormats = 4

// Header returns h with left in every one of formats, as Header does, its
// values written into st. A copy of h is a copy of its map only: its values
// are the caller's, which net/http only reads, and which the caller may
// not change while the request is sent (http.RoundTripper's contract). So
// a copy costs one allocation, however many formats.
func (st *Stamp) Header(h http.Header, own bool, formats []deadline.Format, left time.Duration) http.Header {
	b := st.buf[:0]
	var endsBuf [maxFormats]int
	ends := endsBuf[:0]
	for _, f := range formats {
		b = deadlinefmt.Append(b, string(f), left)
		ends = append(ends, len(b))
	}
	var all string
	if len(b) > 0 && len(b) <= len(st.buf) && &b[0] == &st.buf[0] {
		// st.buf is never written again: the string may share it.
		all = unsafe.String(&st.buf[0], len(b))
	} else {
		all = string(b)
	}
	vals := st.vals[:]
	if len(formats) > len(vals) {
		vals = make([]string, len(formats))
	}
	if !own {
		h2 := make(http.Header, len(h)+len(formats))
		maps.Copy(h2, h)
		h = h2
	}
	start := 0
	for i, f := range formats {
		wire.DropOtherCases(h, string(f))
		vals[i] = all[start:ends[i]]
		h[string(f)] = vals[i : i+1 : i+1]
		start = ends[i]
	}
	return h
}

// lessDelay returns left - delay, for a delay that is not negative,
// saturating at the most negative Duration: a server may ask for the
// largest Duration (WithRetryAfterLimit allows it), and the time left is
// negative once the deadline has passed, so the difference can be past
// what a Duration holds.
func lessDelay(left, delay time.Duration) time.Duration {
	if left < math.MinInt64+delay {
		return math.MinInt64
	}
	return left - delay
}
