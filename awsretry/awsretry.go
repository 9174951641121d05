// Package awsretry reads the error responses of AWS services, so that a
// retryhttp Transport under an AWS SDK retries what the SDKs retry: a
// throttling code on any status (DynamoDB's throttling 400), S3's 400
// RequestTimeout, and an S3 copy that failed inside a 200. Put its
// Classifier in front of the default:
//
//	retryhttp.WithClassifier(classify.First(awsretry.Classifier(), classify.Default()))
package awsretry

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"net/http"
	"strings"

	"github.com/retryhttp/retryhttp/classify"
	"github.com/retryhttp/retryhttp/internal/wire"
)

// Classifier judges the error responses of AWS services by their
// error code, the code the AWS SDKs decide their own retries by, read
// wherever the service's protocol puts it (see ResponseErrorCode):
//
//   - a throttling code (ThrottlingException, Throttling,
//     ProvisionedThroughputExceededException, RequestLimitExceeded,
//     SlowDown, TooManyRequestsException and the others the AWS SDK for Go
//     v2 treats as throttling) is retried with the Throttle facet, whatever
//     the status, so that DynamoDB's throttling 400 is retried and paced as
//     a 429 is;
//   - a transient code (RequestTimeout, RequestTimeoutException) is
//     retried, so that S3's 400 RequestTimeout is;
//   - any other code on a 4xx response is final: a validation error, a
//     failed condition or a signature the server rejected is not fixed by
//     sending the same bytes again. A 408 or 429 is left to its status.
//
// S3 may answer a CopyObject, an UploadPartCopy or a CompleteMultipartUpload
// with 200 OK and an XML body whose root is Error, when the operation
// failed after the headers were sent. The AWS SDKs read such a response as
// a 500, and so does Classifier: it is retried, with the Throttle
// facet for a throttling code (SlowDown). Only those three operations are
// read (a PUT with X-Amz-Copy-Source, a POST with an uploadId parameter),
// never a GetObject or any other body that streams; a result's body is
// left byte for byte, and is waited for no longer than classify.Peek waits. An
// Error that S3 sends after more than 100 ms of a long copy's keep-alive
// whitespace is past that wait, and is the SDK's to see.
//
// A 503 without a code is retried with the Throttle facet, unless it
// carries X-Should-Retry: S3's SlowDown (reduce your request rate) is a 503,
// and the AWS SDKs pace SlowDown as a throttle; a 503 from a load balancer
// has no code at all. Other responses, and a 5xx with a code that is
// neither throttling nor transient, abstain, which leaves them to
// the rest of the chain (classify.Default retries 5xx). So do errors, and
// every outcome once the request's context is done.
//
// A code in a header costs nothing. A code only in the body (DynamoDB, S3,
// SQS, STS, EC2 and most other services send it only there) is read with
// classify.Peek: at most 8 KiB, waited for at most 100 ms, and the
// caller, the SDK, still gets the body byte for byte. A body that stalls,
// or whose code is past the bytes read, gives no code. Put it in front of
// the default chain of a Transport that calls AWS:
//
//	retryhttp.WithClassifier(classify.First(awsretry.Classifier(), classify.Default()))
//
// Whether a request may be sent again is not the classifier's to decide:
// the AWS JSON and query protocols send every call as a POST, which is
// resent only when it is declared resendable (or carries an idempotency
// key, or provably never reached the server).
func Classifier() classify.Classifier { return awsErrorClassifier{} }

type awsErrorClassifier struct{}

func (awsErrorClassifier) Classify(req *http.Request, resp *http.Response, _ error) classify.Verdict {
	if resp == nil || resp.StatusCode < 200 || resp.StatusCode >= 300 && resp.StatusCode < 400 || req.Context().Err() != nil {
		return classify.Verdict{}
	}
	if resp.StatusCode < 300 {
		return s3ErrorIn200(req, resp)
	}
	code := ResponseErrorCode(resp)
	switch {
	case code == "":
		if resp.StatusCode == http.StatusServiceUnavailable && len(resp.Header[wire.ShouldRetryHeader]) == 0 {
			return classify.Verdict{Decision: classify.Retry, Throttle: true}
		}
		return classify.Verdict{}
	case awsThrottleCode(code):
		return classify.Verdict{Decision: classify.Retry, Throttle: true}
	case code == "RequestTimeout" || code == "RequestTimeoutException":
		return classify.Verdict{Decision: classify.Retry}
	case resp.StatusCode < 500 && resp.StatusCode != http.StatusRequestTimeout && resp.StatusCode != http.StatusTooManyRequests:
		return classify.Verdict{Decision: classify.DontRetry}
	}
	return classify.Verdict{}
}

// s3ErrorIn200 judges a 2xx response to a request S3 may answer with an
// error in a 200 as the AWS SDKs do: as a 500 when its XML body's root is
// an Error element, and abstains otherwise.
func s3ErrorIn200(req *http.Request, resp *http.Response) classify.Verdict {
	if kind := wire.ErrorDocumentKind(resp.Header); !s3MayFailIn200(req) || kind != wire.DocXML && kind != wire.DocUnknown {
		return classify.Verdict{}
	}
	prefix, _ := classify.Peek(resp)
	if !strings.EqualFold(xmlRootElement(prefix), "Error") { // as the SDKs compare it
		return classify.Verdict{}
	}
	if awsThrottleCode(wire.TrimOWS(xmlErrorCode(prefix))) {
		return classify.Verdict{Decision: classify.Retry, Throttle: true}
	}
	return classify.Verdict{Decision: classify.Retry}
}

// s3MayFailIn200 reports whether req is one of the S3 operations that may
// fail after their 200 OK: a copy (CopyObject, UploadPartCopy: a PUT with
// X-Amz-Copy-Source) or a CompleteMultipartUpload (a POST with an uploadId
// query parameter).
func s3MayFailIn200(req *http.Request) bool {
	switch req.Method {
	case http.MethodPut:
		return len(req.Header["X-Amz-Copy-Source"]) > 0
	case http.MethodPost:
		for q := req.URL.RawQuery; q != ""; {
			var param string
			param, q, _ = strings.Cut(q, "&")
			if name, _, _ := strings.Cut(param, "="); name == "uploadId" {
				return true
			}
		}
	}
	return false
}

// xmlRootElement returns the local name of the root element of an XML
// document, or "" when the document has none as far as it goes.
func xmlRootElement(doc []byte) string {
	dec := xml.NewDecoder(bytes.NewReader(doc))
	dec.Strict = false
	for {
		tok, err := dec.RawToken()
		if err != nil {
			return ""
		}
		if el, ok := tok.(xml.StartElement); ok {
			return el.Name.Local
		}
	}
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

// ErrorCode returns the error code of an AWS service's response, read
// from its headers as the AWS SDKs read it, or "" when the headers carry
// none:
//
//   - X-Amzn-ErrorType, which the JSON protocols may send; its value may
//     name the code's namespace before a '#' and add a URI after a ':',
//     both of which are dropped:
//     "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException:http://..."
//     gives "ProvisionedThroughputExceededException";
//   - x-amzn-query-error, by which a JSON service that replaced a query API
//     (SQS) names the query API's code, before a ';';
//   - X-Amz-Error-Code, which S3 sends on responses that have no body to
//     hold the code, such as HEAD's.
//
// Most services name the code only in the body: ResponseErrorCode reads
// it there too.
func ErrorCode(h http.Header) string {
	if v := h["X-Amzn-Errortype"]; len(v) > 0 {
		if code := awsCodeName(v[0]); code != "" {
			return code
		}
	}
	if v := h["X-Amzn-Query-Error"]; len(v) > 0 {
		code, _, _ := strings.Cut(v[0], ";")
		if code = wire.TrimOWS(code); code != "" {
			return code
		}
	}
	if v := h["X-Amz-Error-Code"]; len(v) > 0 {
		return wire.TrimOWS(v[0])
	}
	return ""
}

// awsCodeName returns the error name in a code that may carry a namespace
// before a '#' and a URI after a ':'.
func awsCodeName(code string) string {
	if i := strings.IndexByte(code, ':'); i >= 0 {
		code = code[:i]
	}
	if i := strings.IndexByte(code, '#'); i >= 0 {
		code = code[i+1:]
	}
	return wire.TrimOWS(code)
}

// ResponseErrorCode returns the error code of an AWS service's response
// wherever its protocol puts it, or "" when it has none or it cannot be read
// in time. The headers come first (ErrorCode); then, for an error
// response (status 400 or more) of a JSON or XML content type, the body,
// read with classify.Peek, which leaves it intact for the caller:
//
//   - JSON (application/x-amz-json-1.0 and 1.1: DynamoDB, Kinesis, SQS,
//     CloudWatch Logs; application/json: the REST JSON services): the
//     top-level "code" member, or else "__type", namespace and URI dropped;
//     members of nested objects do not count;
//   - XML (text/xml, application/xml): the Code element of an Error element,
//     as S3 sends it (<Error><Code>), the query services (STS, IAM, SNS:
//     <ErrorResponse><Error><Code>) and EC2 (<Response><Errors><Error><Code>);
//   - CBOR (Smithy RPC v2 CBOR, which the AWS SDKs speak to CloudWatch and
//     others: header Smithy-Protocol: rpc-v2-cbor, or application/cbor):
//     the text string of the "__type" key of the top-level map, namespace
//     and URI dropped. It is read without a CBOR library, by a reader that
//     skips what it does not need and stops at anything malformed.
//
// A response without a Content-Type is read when its body starts as JSON or
// XML does, or when its Smithy-Protocol header says it is CBOR. A body that is longer than 8 KiB is read as far as that; one
// that stalls, as far as it arrived within 100 ms.
func ResponseErrorCode(resp *http.Response) string {
	if resp == nil {
		return ""
	}
	if code := ErrorCode(resp.Header); code != "" {
		return code
	}
	if resp.StatusCode < 400 {
		return ""
	}
	kind := wire.ErrorDocumentKind(resp.Header)
	if kind == wire.DocNone {
		return ""
	}
	prefix, _ := classify.Peek(resp)
	if kind == wire.DocUnknown {
		kind = sniffDocument(prefix)
	}
	switch kind {
	case wire.DocJSON:
		return awsCodeName(jsonErrorCode(prefix))
	case wire.DocXML:
		return wire.TrimOWS(xmlErrorCode(prefix))
	case wire.DocCBOR:
		return awsCodeName(cborErrorType(prefix))
	}
	return ""
}

// sniffDocument tells a JSON document from an XML one by its first byte.
func sniffDocument(b []byte) wire.DocKind {
	b = bytes.TrimLeft(b, " \t\r\n")
	switch {
	case len(b) == 0:
		return wire.DocNone
	case b[0] == '{':
		return wire.DocJSON
	case b[0] == '<':
		return wire.DocXML
	}
	return wire.DocNone
}

// jsonErrorCode returns the string value of the top-level "code" member of
// a JSON object (compared without regard to case, as the AWS SDKs do), or
// else of its "__type" member. It reads as far as the document is
// well-formed, so a document cut short still gives a member that came
// before the cut.
func jsonErrorCode(doc []byte) string {
	dec := json.NewDecoder(bytes.NewReader(doc))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return ""
	}
	var typ string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		key, _ := tok.(string)
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			break
		}
		var s string
		switch {
		case strings.EqualFold(key, "code"):
			if json.Unmarshal(value, &s) == nil && s != "" {
				return s
			}
		case key == "__type" && typ == "":
			if json.Unmarshal(value, &s) == nil {
				typ = s
			}
		}
	}
	return typ
}

// xmlErrorCode returns the text of the first Code element whose parent is
// an Error element, or "".
func xmlErrorCode(doc []byte) string {
	dec := xml.NewDecoder(bytes.NewReader(doc))
	dec.Strict = false
	var path []string
	for {
		tok, err := dec.Token()
		if err != nil {
			return ""
		}
		switch el := tok.(type) {
		case xml.StartElement:
			if el.Name.Local == "Code" && len(path) > 0 && path[len(path)-1] == "Error" {
				var code string
				if dec.DecodeElement(&code, &el) != nil {
					return ""
				}
				return code
			}
			path = append(path, el.Name.Local)
		case xml.EndElement:
			if len(path) > 0 {
				path = path[:len(path)-1]
			}
		}
	}
}
