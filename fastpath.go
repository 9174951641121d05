package retryhttp

import (
	"net/http"

	"github.com/retryhttp/retryhttp/budget"
	"github.com/retryhttp/retryhttp/classify"
	"github.com/retryhttp/retryhttp/internal/replay"
	"github.com/retryhttp/retryhttp/internal/wire"
)

// defaultClassifier is the classifier New gives a Transport. New compares
// a Transport's with it once (Transport.plainClassifier), so that a request
// pays for no comparison of interfaces.
var defaultClassifier = classify.Default()

// classify is t.classifier.Classify, with the default classifier's answer
// to a success given without a dynamic call: every request pays for it.
func (t *Transport) classify(a *http.Request, resp *http.Response, err error) classify.Verdict {
	if resp != nil && resp.StatusCode < 300 {
		if t.plainClassifier {
			return classify.Verdict{Decision: classify.DontRetry}
		}
	}
	return t.classifier.Classify(a, resp, err)
}

// deposit is t.budget.Deposit, called directly on the default budget.
func (t *Transport) deposit(req *http.Request, spent budget.Millitokens) {
	if h, ok := t.budget.(*budget.PerHost); ok {
		h.Deposit(req, spent)
		return
	}
	t.budget.Deposit(req, spent)
}

// plain reports whether req's first attempt is req itself, sent as it is,
// with nothing prepared for a retry: a valid request that may be sent
// twice (its method is idempotent or it carries an idempotency key),
// without a body or with a GetBody of http.NewRequest's, through a
// Transport that neither numbers, hedges nor throttles attempts, nor
// traces their connections (every attempt's, or those of a host that
// failed lately), nor sends the request's deadline.
func (t *Transport) plain(req *http.Request) bool {
	// t.shaped: the attempts are numbered, hedged, throttled or all traced.
	if req == nil || req.URL == nil || req.Header == nil || t.shaped || (t.deadlineHeaders != nil && hasDeadline(req.Context())) {
		return false
	}
	if t.conns.Traces(req) {
		return false
	}
	if req.Body != nil && req.Body != http.NoBody && (req.GetBody == nil || !replay.FreshBodies(req.GetBody)) {
		return false
	}
	return wire.IdempotentMethod(req.Method) || wire.HasIdempotencyKey(req.Header)
}

// doneAtOnce reports whether resp, the response to the plain first attempt
// req, ends the request as a success the default classifier would not
// retry, and refills the budget as such a success does.
func (t *Transport) doneAtOnce(req *http.Request, resp *http.Response) bool {
	if resp.StatusCode >= 300 {
		return false
	}
	if !t.plainClassifier {
		return false
	}
	if t.budget != nil {
		t.deposit(req, 0)
	}
	return true
}
