package retryhttp

// How a Transport applies its classifier (WithClassifier; package
// classify holds the classifiers): the default classifier's answer to a
// success is given without a dynamic call, a proxy's refusal of a CONNECT
// is reported as a *classify.ProxyConnectError, and a 421 says that the
// server did not process the request.

import (
	"net/http"

	"github.com/retryhttp/retryhttp/classify"
	"github.com/retryhttp/retryhttp/internal/conns"
)

// defaultClassifier is the classifier New gives a Transport. New compares
// a Transport's with it once (Transport.plainClassifier), so that a request
// pays for no comparison of interfaces.
var defaultClassifier = classify.Default()

// classify is t.classifier.Classify, with the default classifier's answer
// to a success given without a dynamic call: every request pays for it.
func (t *Transport) classify(a *http.Request, resp *http.Response, err error) classify.Verdict {
	if resp != nil && resp.StatusCode < 300 {
		if t.streamWait > 0 && isHeld(resp.Body) {
			if v := streamErrors.Classify(a, resp, err); v.Decision != classify.Abstain {
				return v
			}
		}
		if t.plainClassifier {
			return classify.Verdict{Decision: classify.DontRetry}
		}
	}
	return t.classifier.Classify(a, resp, err)
}

// signalHeader returns the header in which the outcome of an attempt may
// ask for a delay: the response's, or that of a proxy's refusal; nil when
// there is neither.
func signalHeader(resp *http.Response, err error) http.Header {
	if resp != nil {
		return resp.Header
	}
	if pe := conns.ProxyRefusal(err); pe != nil {
		return pe.Header
	}
	return nil
}

// notProcessed reports whether resp says that the server did not process
// the request: a 421 Misdirected Request, which RFC 9110 lets a client
// retry whatever its method, on another connection.
func notProcessed(resp *http.Response) bool {
	return resp != nil && resp.StatusCode == http.StatusMisdirectedRequest
}
