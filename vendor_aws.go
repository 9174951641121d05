package retryhttp

import (
	"net/http"
	"strings"
)

// AWSErrorClassifier judges the error responses of AWS services by the
// error code they carry in a header, the code the AWS SDKs decide their
// own retries by (AWSErrorCode reads it):
//
//   - a throttling code (ThrottlingException, Throttling,
//     ProvisionedThroughputExceededException, RequestLimitExceeded,
//     SlowDown, TooManyRequestsException and the others the AWS SDK for Go
//     v2 treats as throttling) is retried with the Throttle facet, whatever
//     the status, so that DynamoDB's throttling 400 is retried and paced as
//     a 429 is;
//   - a transient code (RequestTimeout, RequestTimeoutException) is retried;
//   - any other code on a 4xx response is final: a validation error, a
//     failed condition or a signature the server rejected is not fixed by
//     sending the same bytes again. A 408 or 429 is left to its status.
//
// A 503 without a code is retried with the Throttle facet, unless it
// carries X-Should-Retry: S3 answers "SlowDown" (reduce your request rate)
// with a 503 whose code is only in its XML body, and the AWS SDKs pace
// SlowDown as a throttle. Other responses, and a 5xx with a code that is
// neither throttling nor transient, have no opinion, which leaves them to
// the rest of the chain (DefaultClassifier retries 5xx). So do errors, and
// every outcome once the request's context is done.
//
// It reads headers only, never the response body. Put it in front of the
// default chain of a Transport that calls AWS:
//
//	retryhttp.WithClassifier(retryhttp.Chain{retryhttp.AWSErrorClassifier(), retryhttp.DefaultClassifier()})
//
// Whether a request may be sent again is not the classifier's to decide:
// the AWS JSON and query protocols send every call as a POST, which is
// resent only when it is declared resendable (or carries an idempotency
// key, or provably never reached the server).
func AWSErrorClassifier() Classifier { return awsErrorClassifier{} }

type awsErrorClassifier struct{}

func (awsErrorClassifier) Classify(req *http.Request, resp *http.Response, _ error) Verdict {
	if resp == nil || resp.StatusCode < 400 || req.Context().Err() != nil {
		return Verdict{}
	}
	code := AWSErrorCode(resp.Header)
	switch {
	case code == "":
		if resp.StatusCode == http.StatusServiceUnavailable && len(resp.Header[ShouldRetryHeader]) == 0 {
			return Verdict{Decision: Retry, Throttle: true}
		}
		return Verdict{}
	case awsThrottleCode(code):
		return Verdict{Decision: Retry, Throttle: true}
	case code == "RequestTimeout" || code == "RequestTimeoutException":
		return Verdict{Decision: Retry}
	case resp.StatusCode < 500 && resp.StatusCode != http.StatusRequestTimeout && resp.StatusCode != http.StatusTooManyRequests:
		return Verdict{Decision: DontRetry}
	}
	return Verdict{}
}

// awsThrottleCode reports the error codes that the AWS SDK for Go v2 treats
// as throttling (its retry.DefaultThrottleErrorCodes).
func awsThrottleCode(code string) bool {
	switch code {
	case "Throttling", "ThrottlingException", "ThrottledException", "RequestThrottledException",
		"TooManyRequestsException", "ProvisionedThroughputExceededException",
		"TransactionInProgressException", "RequestLimitExceeded", "BandwidthLimitExceeded",
		"LimitExceededException", "RequestThrottled", "SlowDown", "PriorRequestNotComplete",
		"EC2ThrottledException":
		return true
	}
	return false
}

// AWSErrorCode returns the error code of an AWS service's response, read
// from its headers as the AWS SDKs read it, or "" when the headers carry
// none. X-Amzn-ErrorType, which the JSON protocols send (DynamoDB among
// them), comes first; its value may name the code's namespace before a '#'
// and add a URI after a ':', both of which are dropped:
// "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException:http://..."
// gives "ProvisionedThroughputExceededException". Otherwise X-Amz-Error-Code,
// which S3 sends on responses that have no body to hold the code, such as
// HEAD's.
//
// S3 and the other XML protocols name the code of most errors only in the
// response body, which this does not read.
func AWSErrorCode(h http.Header) string {
	if v := h["X-Amzn-Errortype"]; len(v) > 0 {
		code := trimOWS(v[0])
		if i := strings.IndexByte(code, ':'); i >= 0 {
			code = code[:i]
		}
		if i := strings.IndexByte(code, '#'); i >= 0 {
			code = code[i+1:]
		}
		if code = trimOWS(code); code != "" {
			return code
		}
	}
	if v := h["X-Amz-Error-Code"]; len(v) > 0 {
		return trimOWS(v[0])
	}
	return ""
}
