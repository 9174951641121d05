package retryhttp

import (
	"log/slog"
	"math"
	"net/http"
	"time"

	"github.com/retryhttp/retryhttp/internal/wire"

	"github.com/retryhttp/retryhttp/internal/latency"
)

// Before each retry and each hedge of a request with a deadline, the
// Transport asks whether the attempt can finish: whether the time that
// will be left when it is sent is at least what an answer from its host
// typically takes. An attempt that cannot is not sent: it would spend a
// budget token, a connection and the host's work on an answer no one will
// read. A first attempt is always sent: its caller chose the deadline.
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
	fitQuantile = 0.5
	// fitMinSamples is how many answers of a host must be known before
	// their median is trusted: with 20, the median lies between the 30th
	// and the 70th percentile 19 times in 20. Until then, an attempt needs
	// only minTimeLeft.
	fitMinSamples = 20
	// fitWindow is how many answer times a window of the Transport's own
	// table holds, when hedging does not keep them: the median covers the
	// last 100 to 200 answers, and follows a host that turns slow within
	// 200.
	fitWindow = 100
	// fitHosts bounds the hosts whose answer times the Transport's own
	// table keeps, as the budget bounds its buckets.
	fitHosts = 1024
)

// answerTable returns the table in which the Transport keeps its hosts'
// answer times for the check: nil when hedging keeps them, in its own
// table, for every request it may hedge; otherwise a table of its own,
// which records the attempts of requests with a deadline only, so that a
// request without one costs no clock reading.
func answerTable(t *Transport) *latency.Table {
	if t.hedge != nil {
		return nil
	}
	return latency.NewTable(fitHosts)
}

// typicalAnswer returns the median of the recent times to response headers
// of req's host, or 0 while fewer than fitMinSamples are known.
func (t *Transport) typicalAnswer(req *http.Request) time.Duration {
	table := t.answers
	if t.hedge != nil {
		table = t.hedge.Table()
	}
	hl := table.Lookup(wire.RequestKey(req))
	if hl == nil {
		return 0
	}
	return hl.Quantile(fitQuantile, fitMinSamples)
}

// retryFits reports whether a retry of the failed attempt a, sent at now
// after delay, would have time to finish before the request's deadline:
// at least the host's typical answer time left, and at least minTimeLeft.
// A request without a deadline always has time.
func (t *Transport) retryFits(a *http.Request, now time.Time, delay time.Duration) bool {
	deadline, ok := a.Context().Deadline()
	if !ok {
		return true
	}
	left := lessDelay(deadline.Sub(now), delay)
	if t.noFitCheck {
		return left > 0
	}
	return left >= max(t.typicalAnswer(a), minTimeLeft)
}

// hedgeTime returns the time left for a hedge of req to the host of hl,
// for its deadline headers (0 without them), and whether the hedge may be
// sent: it has at least the host's typical answer time left, and at least
// minTimeLeft.
func (t *Transport) hedgeTime(req *http.Request, hl *latency.Host) (time.Duration, bool) {
	deadline, ok := req.Context().Deadline()
	if !ok {
		return 0, true
	}
	left := deadline.Sub(t.now())
	var need time.Duration
	switch {
	case !t.noFitCheck:
		need = max(hl.Quantile(fitQuantile, fitMinSamples), minTimeLeft)
	case t.deadlineHeaders != nil:
		need = minTimeLeft
	}
	if left < need {
		return left, false
	}
	if t.deadlineHeaders == nil {
		left = 0 // no header carries it
	}
	return left, true
}

// sendTimed is exchange, recording the attempt's time to response
// headers.
func (t *Transport) sendTimed(rt http.RoundTripper, a *http.Request) (*http.Response, error) {
	start := latency.Monotonic()
	var resp *http.Response
	var err error
	if t.attemptTimeout <= 0 {
		resp, err = checkResult(rt.RoundTrip(a))
	} else {
		resp, err = t.sendWithTimeout(rt, a)
	}
	t.recordAnswer(a, start, resp)
	return resp, err
}

// recordAnswer records the time to response headers of attempt a, sent at
// start (monotonic), when it has a response.
func (t *Transport) recordAnswer(a *http.Request, start time.Duration, resp *http.Response) {
	if resp != nil {
		t.answers.Host(wire.RequestKey(a)).Add(latency.Monotonic()-start, fitWindow)
	}
}

// deadlineFacts returns, for a request given up on for lack of time, the
// time left before its deadline and its host's typical answer time.
func (t *Transport) deadlineFacts(req *http.Request) (left, typical time.Duration) {
	return t.leftAfter(req, 0), t.typicalAnswer(req)
}

// leftAfter returns the time that will be left before req's deadline once
// delay has passed, 0 when req has no deadline.
func (t *Transport) leftAfter(req *http.Request, delay time.Duration) time.Duration {
	deadline, ok := req.Context().Deadline()
	if !ok {
		return 0
	}
	return lessDelay(deadline.Sub(t.now()), delay)
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

// appendTimeLeft appends to a retry's log attributes the time it will have
// left, when its request has a deadline.
func appendTimeLeft(attrs []slog.Attr, left time.Duration) []slog.Attr {
	if left == 0 {
		return attrs
	}
	return append(attrs, slog.Duration("time_left", left))
}

// appendDeadlineFacts appends to a give-up's log attributes, when it was
// for lack of time, the wait the retry would have had, the time that would
// have been left once it was sent (negative when the wait passes the
// deadline), and the host's typical answer time, which was more.
func (t *Transport) appendDeadlineFacts(attrs []slog.Attr, req *http.Request, reason GiveUpReason, delay time.Duration) []slog.Attr {
	if reason != GiveUpDeadline {
		return attrs
	}
	return append(attrs, slog.Duration("delay", delay), slog.Duration("time_left", t.leftAfter(req, delay)),
		slog.Duration("host_latency", t.typicalAnswer(req)))
}
