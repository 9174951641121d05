package classify

import (
	"net/http"

	"github.com/retryhttp/retryhttp/internal/wire"
)

// ShouldRetry follows what the server said about retrying in the
// named response headers (by default X-Should-Retry): "false" makes the
// outcome final even for a retryable status, and "true" makes it retryable
// even for a status the rest of the chain would refuse, except a 1xx or 2xx
// success, which is never retried. A retry it allows is still subject to the
// idempotency rules, the attempt limit and the budget. Values are compared
// without regard to the case of their ASCII letters ("TRUE" is "true"); other
// values, and responses without the headers, abstain. The first
// named header present decides.
func ShouldRetry(headers ...string) Classifier {
	if len(headers) == 0 {
		return serverSignalClassifier{} // no names: X-Should-Retry
	}
	names := make([]string, len(headers))
	for i, h := range headers {
		names[i] = http.CanonicalHeaderKey(h)
	}
	return serverSignalClassifier{names: names}
}

type serverSignalClassifier struct{ names []string }

func (c serverSignalClassifier) Classify(_ *http.Request, resp *http.Response, _ error) Verdict {
	if resp == nil || resp.StatusCode < 300 {
		return Verdict{} // a success is never retried
	}
	switch serverSignal(resp.Header, c.names) {
	case wire.SignalRetry:
		// Keep the status's own facets, so that a throttled answer is
		// still paced as one.
		v := (statusClassifier{}).Classify(nil, resp, nil)
		return Verdict{Decision: Retry, Throttle: v.Throttle, Timeout: v.Timeout}
	case wire.SignalFinal:
		return Verdict{Decision: DontRetry}
	}
	return Verdict{}
}

// serverSignal reads the first of the named headers present in h; no names
// means X-Should-Retry.
func serverSignal(h http.Header, names []string) wire.Signal {
	if names == nil {
		return wire.ParseSignal(h[wire.ShouldRetryHeader])
	}
	for _, name := range names {
		if values := h[name]; len(values) > 0 {
			return wire.ParseSignal(values)
		}
	}
	return wire.SignalNone
}

// IdempotencyConflict judges the answers of servers that
// implement idempotency keys, for requests that carry one: 409 Conflict
// means the first request with that key is still being processed, so the
// request is retried, paced as a throttled one to give the original time to
// finish; 422 Unprocessable Content means the key was used before with
// another payload, so it is final. It abstains otherwise.
func IdempotencyConflict() Classifier { return conflictClassifier{} }

type conflictClassifier struct{}

func (conflictClassifier) Classify(req *http.Request, resp *http.Response, _ error) Verdict {
	if resp == nil {
		return Verdict{}
	}
	switch code := resp.StatusCode; {
	case code == http.StatusConflict && wire.HasIdempotencyKey(req.Header):
		return Verdict{Decision: Retry, Throttle: true}
	case code == http.StatusUnprocessableEntity && wire.HasIdempotencyKey(req.Header):
		return Verdict{Decision: DontRetry}
	}
	return Verdict{}
}
