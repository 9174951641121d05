package stream

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/retryhttp/retryhttp/classify"
)

// Errors returns a Classifier of the error events LLM APIs open a 200
// stream with, when they fail after the status was sent: it judges the
// first event of a held stream (First) as the status the API gives the
// same failure, and abstains on any other response.
//
//   - Anthropic's: event error, data {"type":"error","error":{"type":...}}.
//     overloaded_error is retried as a 529 is, rate_limit_error as a 429
//     (a throttle), api_error and timeout_error as a 500; any other type
//     (invalid_request_error, authentication_error, ...) is final.
//   - OpenAI's: a first event whose data is {"error":{...}} (Chat
//     Completions), or of type error (the Responses API). server_error and
//     a code or type rate_limit_exceeded are retried, as a 500 and a 429;
//     any other is final.
//
// WithStreams puts it in front of the Transport's classifiers.
func Errors() classify.Classifier { return classify.Func(errorEvents) }

// An errorDoc is the part of an error event the classifier reads: the
// vendor's error object, at the top (OpenAI's Responses API) or under
// "error".
type errorDoc struct {
	Code  any `json:"code"`
	Error *struct {
		Type string `json:"type"`
		Code any    `json:"code"`
	} `json:"error"`
}

func errorEvents(_ *http.Request, resp *http.Response, err error) classify.Verdict {
	if err != nil {
		return classify.Verdict{}
	}
	ev, ok := First(resp)
	if !ok || ev.Type != "error" && (len(ev.Data) == 0 || ev.Data[0] != '{') {
		return classify.Verdict{}
	}
	if !bytes.Contains(ev.Data, []byte(`"error"`)) {
		return classify.Verdict{} // a document without an error member, at no cost to decode
	}
	var doc errorDoc
	if json.Unmarshal(ev.Data, &doc) != nil {
		return classify.Verdict{}
	}
	var kind string
	code := doc.Code // the Responses API's: its type is "error", its code says which
	switch {
	case doc.Error != nil:
		kind, code = doc.Error.Type, doc.Error.Code
	case ev.Type != "error":
		return classify.Verdict{} // data, not an error
	}
	if c, ok := code.(string); ok && (kind == "" || c == "rate_limit_exceeded") {
		kind = c
	}
	switch kind {
	case "overloaded_error", "api_error", "timeout_error", "server_error":
		return classify.Verdict{Decision: classify.Retry}
	case "rate_limit_error", "rate_limit_exceeded":
		return classify.Verdict{Decision: classify.Retry, Throttle: true}
	}
	return classify.Verdict{Decision: classify.DontRetry}
}
