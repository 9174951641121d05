package retryhttp

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/retryhttp/retryhttp/internal/deadlines"
	"github.com/retryhttp/retryhttp/internal/latency"
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
	return latency.NewTable(deadlines.Hosts)
}

// typicalAnswer returns the median of the recent times to response headers
// of req's host (deadlines.Typical), in hedging's table when it keeps them.
func (t *Transport) typicalAnswer(req *http.Request) time.Duration {
	table := t.answers
	if t.hedge != nil {
		table = t.hedge.Table()
	}
	return deadlines.Typical(table, req)
}

// retryFits reports whether a retry of the failed attempt a, sent at now
// after delay, would have time to finish before the request's deadline
// (deadlines.RetryFits).
func (t *Transport) retryFits(a *http.Request, now time.Time, delay time.Duration) bool {
	if _, ok := a.Context().Deadline(); !ok {
		return true
	}
	return deadlines.RetryFits(a.Context(), now, delay, t.typicalAnswer(a), !t.noFitCheck)
}

// hedgeTime returns the time left for a hedge of req to the host of hl,
// and whether the hedge may be sent (deadlines.HedgeTime).
func (t *Transport) hedgeTime(req *http.Request, hl *latency.Host) (time.Duration, bool) {
	return deadlines.HedgeTime(req.Context(), t.now(), hl, !t.noFitCheck, t.deadlineHeaders != nil)
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
		deadlines.Record(t.answers, a, start)
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
	return deadlines.LeftAfter(req.Context(), t.now(), delay)
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
