package retryhttp

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
	"time"

	"github.com/retryhttp/retryhttp/deadline"
	"github.com/retryhttp/retryhttp/internal/conns"
	"github.com/retryhttp/retryhttp/internal/deadlinefmt"
	"github.com/retryhttp/retryhttp/internal/deadlines"
	"github.com/retryhttp/retryhttp/internal/latency"
	"github.com/retryhttp/retryhttp/internal/layer"
)

// ErrNoTimeLeft is the error of a request whose next attempt was not sent
// because less than 1 ms was left before its deadline (WithDeadlineHeader):
// no answer could arrive in time, and the millisecond formats cannot say so
// little. errors.Is reports it as context.DeadlineExceeded too, and it is a
// timeout (its Timeout method reports true), as the context's own error
// would be a moment later. Its ErrorType method names it "timeout", the
// value OpenTelemetry's semantic conventions give error.type for a timeout.
var ErrNoTimeLeft error = noTimeLeft{}

type noTimeLeft struct{}

func (noTimeLeft) Error() string        { return "retryhttp: less than 1ms left before the deadline" }
func (noTimeLeft) Is(target error) bool { return target == context.DeadlineExceeded }
func (noTimeLeft) Timeout() bool        { return true }
func (noTimeLeft) ErrorType() string    { return "timeout" }

// WithDeadlineHeader sends, with every attempt of a request whose context
// has a deadline, the time left before that deadline at the moment the
// attempt is sent, in each of the given formats, so that the service called
// can stop working when its caller stops waiting, and pass the rest of the
// time on to its own dependencies (server.Deadline reads it). Each attempt
// carries its own time left: a retry, sent later, carries less. It is off
// by default: a new header on every request is not something a caller
// expects unasked.
//
// An attempt with less than 1 ms left is not sent at all: nothing could
// answer in time, Envoy would read 0 ms as no timeout, and Connect would
// omit the header, so that the server saw no deadline. A first attempt not
// sent ends the request with an *Error of no attempts wrapping
// ErrNoTimeLeft; the WithOnGiveUp hooks see it with reason GiveUpDeadline.
// A request without a deadline is sent as it is, with nothing added and
// nothing allocated. The caller's request is never modified: an attempt
// with a deadline has a header of its own. deadline.Sent reads, in a base
// under the Transport, the time an attempt carries.
//
// It panics if no format is given or a format is not a valid header name.
// Given more than once, the formats add up: each is sent once.
func WithDeadlineHeader(formats ...deadline.Format) Option {
	formats = deadlinefmt.Check("retryhttp: WithDeadlineHeader", formats)
	return func(t *Transport) {
		for _, f := range formats {
			if !slices.Contains(t.deadlineHeaders, f) {
				t.deadlineHeaders = append(t.deadlineHeaders, f)
			}
		}
	}
}

// timeToSend returns the time left before the deadline of the request whose
// context is ctx, for its next attempt's deadline headers, and whether the
// attempt may be sent (deadlines.TimeToSend). Without deadline headers it
// returns 0 and true.
func (t *Transport) timeToSend(ctx context.Context) (time.Duration, bool) {
	if t.deadlineHeaders == nil {
		return 0, true
	}
	return deadlines.TimeToSend(ctx, t.now())
}

// hasDeadline reports whether ctx has a deadline.
func hasDeadline(ctx context.Context) bool {
	_, ok := ctx.Deadline()
	return ok
}

// deadlineHeader returns h, an attempt's header, with the time left, left,
// in every deadline header (deadlines.Header).
func (t *Transport) deadlineHeader(h http.Header, own bool, left time.Duration) http.Header {
	return deadlines.Header(h, own, t.deadlineHeaders, left)
}

// refuseFirst ends req, whose first attempt is not sent since only left
// remains before its deadline: it closes the request's body, logs and
// reports the give-up, tells a server.Handler serving the request, and
// returns the error.
func (t *Transport) refuseFirst(req *http.Request, left time.Duration) (*http.Response, error) {
	closeBody(req.Body)
	t.log().NotSent(req, 0, "retryhttp: not sending", string(GiveUpDeadline), slog.Duration("time_left", left))
	t.reportGiveUp(req, GiveUpDeadline, ErrNoTimeLeft)
	layer.MarkGaveUp(req.Context())
	return nil, &Error{Err: ErrNoTimeLeft}
}

// waitReason is why a retry whose wait ended in err was given up on.
func waitReason(err error) GiveUpReason {
	if err == ErrNoTimeLeft {
		return GiveUpDeadline
	}
	return GiveUpCanceled
}

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
		resp, err = conns.CheckResult(rt.RoundTrip(a))
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
