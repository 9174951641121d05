// Package googleretry reads the error documents of Google APIs, so that a
// retryhttp Transport retries a 403 whose reason is a rate limit
// (rateLimitExceeded, userRateLimitExceeded) as a throttle. Put its
// Classifier in front of the default:
//
//	retryhttp.WithClassifier(classify.First(googleretry.Classifier(), classify.Default()))
package googleretry

import (
	"encoding/json"
	"net/http"

	"github.com/retryhttp/retryhttp/classify"
	"github.com/retryhttp/retryhttp/internal/wire"
)

// Classifier recognises the rate limits and transient
// failures that Google APIs report with a 403 Forbidden, which the default
// chain would take as final. Google's JSON error document names them in the
// reason of its errors, or, in the newer form, of an ErrorInfo detail:
//
//   - rateLimitExceeded, userRateLimitExceeded (RATE_LIMIT_EXCEEDED in an
//     ErrorInfo): retried with the Throttle facet, paced as a 429 is;
//   - backendError, internalError: retried;
//   - any other reason (a missing permission, a daily quota spent,
//     quotaExceeded) and a document that cannot be read abstain,
//     which the default chain makes final.
//
// A rate limit's document looks like this:
//
//	{"error": {"code": 403, "message": "...", "status": "PERMISSION_DENIED",
//	  "errors": [{"domain": "usageLimits", "reason": "rateLimitExceeded", "message": "..."}]}}
//
// Only 403 responses with a JSON body are read, with classify.Peek: at most
// 8 KiB, waited for at most 100 ms, and the caller still gets the
// body byte for byte. Google's 429 and 5xx responses need no reading: the
// default chain retries them by status. Nothing is read for other
// responses, nor once the request's context is done. Put it in front of
// the default chain of a Transport that calls Google APIs:
//
//	retryhttp.WithClassifier(classify.First(googleretry.Classifier(), classify.Default()))
//
// A rate-limited request is retried only if it may be sent again: a POST
// without an idempotency key needs to be declared resendable.
func Classifier() classify.Classifier { return googleAPIErrorClassifier{} }

type googleAPIErrorClassifier struct{}

func (googleAPIErrorClassifier) Classify(req *http.Request, resp *http.Response, _ error) classify.Verdict {
	if resp == nil || resp.StatusCode != http.StatusForbidden || req.Context().Err() != nil ||
		wire.ErrorDocumentKind(resp.Header) != wire.DocJSON {
		return classify.Verdict{}
	}
	doc, complete := classify.Peek(resp)
	if !complete {
		return classify.Verdict{}
	}
	switch googleErrorReason(doc) {
	case "rateLimitExceeded", "userRateLimitExceeded", "RATE_LIMIT_EXCEEDED":
		return classify.Verdict{Decision: classify.Retry, Throttle: true}
	case "backendError", "internalError":
		return classify.Verdict{Decision: classify.Retry}
	}
	return classify.Verdict{}
}

// googleErrorDocument is the part of a Google API error document that
// names why the request failed.
type googleErrorDocument struct {
	Error struct {
		Errors []struct {
			Reason string `json:"reason"`
		} `json:"errors"`
		Details []struct {
			Type   string `json:"@type"`
			Reason string `json:"reason"`
		} `json:"details"`
	} `json:"error"`
}

// googleErrorReason returns the reason of the first error in a Google API
// error document, or of its ErrorInfo detail, or "".
func googleErrorReason(doc []byte) string {
	var d googleErrorDocument
	if json.Unmarshal(doc, &d) != nil {
		return ""
	}
	for _, e := range d.Error.Errors {
		if e.Reason != "" {
			return e.Reason
		}
	}
	for _, e := range d.Error.Details {
		if e.Type == "type.googleapis.com/google.rpc.ErrorInfo" && e.Reason != "" {
			return e.Reason
		}
	}
	return ""
}
