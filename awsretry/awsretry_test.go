package awsretry

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"maps"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"
	"unicode/utf8"

	"github.com/retryhttp/retryhttp/classify"
	"github.com/retryhttp/retryhttp/githubretry"
	"github.com/retryhttp/retryhttp/internal/testkit"
	"github.com/retryhttp/retryhttp/internal/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// awsErrorCodeTests is shared by TestAWSErrorCode and the seed corpus of
// FuzzAWSErrorCode.
var awsErrorCodeTests = []struct {
	name   string
	header http.Header
	want   string
}{
	{"none", http.Header{}, ""},
	{"bare", http.Header{"X-Amzn-Errortype": {"ThrottlingException"}}, "ThrottlingException"},
	{"namespace and URI",
		http.Header{"X-Amzn-Errortype": {"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException:http://internal.amazon.com/coral/"}},
		"ProvisionedThroughputExceededException"},
	{"namespace", http.Header{"X-Amzn-Errortype": {"aws.protocoltests#ValidationException"}}, "ValidationException"},
	{"URI", http.Header{"X-Amzn-Errortype": {"ValidationException:http://internal.amazon.com/coral/com.amazon.coral.validate/"}}, "ValidationException"},
	{"spaces", http.Header{"X-Amzn-Errortype": {" \tThrottlingException "}}, "ThrottlingException"},
	{"first value", http.Header{"X-Amzn-Errortype": {"Throttling", "ValidationException"}}, "Throttling"},
	{"S3 header", http.Header{"X-Amz-Error-Code": {"SlowDown"}}, "SlowDown"},
	{"ErrorType first", http.Header{"X-Amzn-Errortype": {"ThrottlingException"}, "X-Amz-Error-Code": {"NoSuchKey"}}, "ThrottlingException"},
	{"empty ErrorType falls through", http.Header{"X-Amzn-Errortype": {"ns#:uri"}, "X-Amz-Error-Code": {"SlowDown"}}, "SlowDown"},
	{"empty", http.Header{"X-Amzn-Errortype": {""}}, ""},
	{"query error", http.Header{"X-Amzn-Query-Error": {"AWS.SimpleQueueService.NonExistentQueue;Sender"}}, "AWS.SimpleQueueService.NonExistentQueue"},
	{"query error without a fault", http.Header{"X-Amzn-Query-Error": {" Customized "}}, "Customized"},
	{"empty query error falls through", http.Header{"X-Amzn-Query-Error": {";Sender"}, "X-Amz-Error-Code": {"SlowDown"}}, "SlowDown"},
	{"ErrorType before the query error", http.Header{"X-Amzn-Errortype": {"A"}, "X-Amzn-Query-Error": {"B;Sender"}}, "A"},

	// Hostile values.
	{"a namespace only", http.Header{"X-Amzn-Errortype": {"ns#"}}, ""},
	{"a URI only", http.Header{"X-Amzn-Errortype": {":http://x/"}}, ""},
	{"two namespaces", http.Header{"X-Amzn-Errortype": {"a#b#c"}}, "b#c"},
	{"a URI before the namespace", http.Header{"X-Amzn-Errortype": {"a:b#c"}}, "a"},
	{"a thousand namespaces", http.Header{"X-Amzn-Errortype": {strings.Repeat("#", 1000) + "X"}}, strings.Repeat("#", 999) + "X"},
	{"a thousand URIs", http.Header{"X-Amzn-Errortype": {"X" + strings.Repeat(":", 1000)}}, "X"},
	{"spaces only", http.Header{"X-Amzn-Errortype": {" \t "}, "X-Amzn-Query-Error": {" ; "}, "X-Amz-Error-Code": {" "}}, ""},
	{"invalid UTF-8", http.Header{"X-Amzn-Errortype": {"ns#\xff\xfe:uri"}}, "\xff\xfe"},
	{"a thousand faults", http.Header{"X-Amzn-Query-Error": {"Q" + strings.Repeat(";Sender", 1000)}}, "Q"},
}

func TestAWSErrorCode(t *testing.T) {
	for _, tt := range awsErrorCodeTests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, ErrorCode(tt.header))
		})
	}
}

// FuzzAWSErrorCode checks ErrorCode against its grammar: the name in
// X-Amzn-ErrorType, namespace and URI dropped, or else the code in
// x-amzn-query-error before its fault, or else X-Amz-Error-Code; each
// without spaces around it, and only from the header it came from.
func FuzzAWSErrorCode(f *testing.F) {
	for _, tt := range awsErrorCodeTests {
		f.Add(tt.header.Get("X-Amzn-Errortype"), tt.header.Get("X-Amzn-Query-Error"), tt.header.Get("X-Amz-Error-Code"))
	}
	f.Fuzz(func(t *testing.T, errorType, queryError, errorCode string) {
		h := testkit.HeaderOf(map[string]string{"X-Amzn-Errortype": errorType, "X-Amzn-Query-Error": queryError, "X-Amz-Error-Code": errorCode})
		code := ErrorCode(h)
		trim := func(s string) string { return strings.Trim(s, " \t") }
		name, _, _ := strings.Cut(errorType, ":")
		if i := strings.Index(name, "#"); i >= 0 {
			name = name[i+1:]
		}
		query, _, _ := strings.Cut(queryError, ";")
		var want string
		switch {
		case trim(name) != "":
			want = trim(name)
		case trim(query) != "":
			want = trim(query)
		default:
			want = trim(errorCode)
		}
		if code != want {
			t.Fatalf("AWSErrorCode(%q) = %q, want %q", h, code, want)
		}
		if code != "" && !strings.Contains(errorType, code) && !strings.Contains(queryError, code) && !strings.Contains(errorCode, code) {
			t.Fatalf("AWSErrorCode(%q) = %q, in no header", h, code)
		}
	})
}

// awsResponse returns a response with the status and the AWS error code in
// the header the JSON protocols use, or none for code "".
func awsResponse(status int, code string) *http.Response {
	h := http.Header{}
	if code != "" {
		h.Set("X-Amzn-ErrorType", code)
	}
	return &http.Response{StatusCode: status, Header: h, Body: http.NoBody}
}

func TestAWSErrorClassifier(t *testing.T) {
	retry := classify.Verdict{Decision: classify.Retry}
	throttle := classify.Verdict{Decision: classify.Retry, Throttle: true}
	final := classify.Verdict{Decision: classify.DontRetry}
	tests := []struct {
		name string
		resp *http.Response
		want classify.Verdict
	}{
		{"DynamoDB throttling", awsResponse(400, "com.amazonaws.dynamodb.v20120810#ThrottlingException"), throttle},
		{"DynamoDB provisioned throughput", awsResponse(400, "ProvisionedThroughputExceededException"), throttle},
		{"query throttling", awsResponse(400, "Throttling"), throttle},
		{"EC2 request limit", awsResponse(503, "RequestLimitExceeded"), throttle},
		{"too many requests", awsResponse(429, "TooManyRequestsException"), throttle},
		{"limit exceeded", awsResponse(400, "LimitExceededException"), throttle},
		{"transaction in progress", awsResponse(400, "TransactionInProgressException"), throttle},
		{"prior request not complete", awsResponse(400, "PriorRequestNotComplete"), throttle},
		{"S3 SlowDown header", &http.Response{StatusCode: 503, Header: http.Header{"X-Amz-Error-Code": {"SlowDown"}}}, throttle},
		{"request timeout", awsResponse(400, "RequestTimeout"), retry},
		{"request timeout exception", awsResponse(408, "RequestTimeoutException"), retry},
		{"validation", awsResponse(400, "ValidationException"), final},
		{"condition failed", awsResponse(400, "ConditionalCheckFailedException"), final},
		{"clock skew", awsResponse(403, "InvalidSignatureException"), final},
		{"unknown 4xx code", awsResponse(400, "SomethingNew"), final},
		{"429 with another code", awsResponse(429, "SomethingNew"), classify.Verdict{}},
		{"408 with another code", awsResponse(408, "SomethingNew"), classify.Verdict{}},
		{"S3 missing key", &http.Response{StatusCode: 404, Header: http.Header{"X-Amz-Error-Code": {"NoSuchKey"}}}, final},
		{"503 without a code: SlowDown", awsResponse(503, ""), throttle},
		{"503 with X-Should-Retry", &http.Response{StatusCode: 503, Header: http.Header{"X-Should-Retry": {"false"}}}, classify.Verdict{}},
		{"5xx with another code", awsResponse(500, "InternalServerError"), classify.Verdict{}},
		{"503 with another code", awsResponse(503, "ServiceUnavailable"), classify.Verdict{}},
		{"500 without a code", awsResponse(500, ""), classify.Verdict{}},
		{"4xx without a code", awsResponse(400, ""), classify.Verdict{}},
		{"429 without a code", awsResponse(429, ""), classify.Verdict{}},
		{"success with a code", awsResponse(200, "ThrottlingException"), classify.Verdict{}},
		{"redirect", awsResponse(307, "ThrottlingException"), classify.Verdict{}},
	}
	req := testkit.Get(t, "http://dynamodb.test/")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Classifier().Classify(req, tt.resp, nil))
		})
	}
	t.Run("error", func(t *testing.T) {
		assert.Equal(t, classify.Verdict{}, Classifier().Classify(req, nil, context.DeadlineExceeded))
	})
	t.Run("caller gave up", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		v := Classifier().Classify(req.WithContext(ctx), awsResponse(400, "ThrottlingException"), nil)
		assert.Equal(t, classify.Verdict{}, v)
	})
}

// The error documents of each AWS protocol, in the forms the Smithy
// protocol tests (awsJson1_0, awsJson1_1, restJson1, restXml, awsQuery,
// ec2Query) say a client must read, with %s where the code goes.
var awsWireForms = []struct {
	name, contentType, body string
}{
	{"awsJson1_0 __type with namespace", "application/x-amz-json-1.0", `{"__type":"com.amazonaws.dynamodb.v20120810#%s","message":"m"}`},
	{"awsJson1_0 __type bare", "application/x-amz-json-1.0", `{"__type": "%s"}`},
	{"awsJson1_0 __type with namespace and URI", "application/x-amz-json-1.0",
		`{"__type":"aws.protocoltests.json10#%s:http://internal.amazon.com/coral/com.amazon.coral.validate/"}`},
	{"awsJson1_0 code", "application/x-amz-json-1.0", `{"code": "%s"}`},
	{"awsJson1_0 code with namespace and URI", "application/x-amz-json-1.0",
		`{"code":"aws.protocoltests.json10#%s:http://internal.amazon.com/coral/com.amazon.coral.validate/"}`},
	{"awsJson1_0 nested __type after the error's", "application/x-amz-json-1.0",
		`{"__type":"aws.protocoltests.json10#%s","ErrorDetails":[{"__type":"com.amazon.internal#ErrorDetails","reason":"r"}]}`},
	{"awsJson1_1 __type", "application/x-amz-json-1.1", `{"__type":"com.amazonaws.kinesis#%s","message":"Rate exceeded"}`},
	{"awsJson1_1 Code in another case", "application/x-amz-json-1.1; charset=utf-8", `{"Code":"%s","Message":"m"}`},
	{"restJson1 code", "application/json", `{"code":"aws.protocoltests.restjson#%s"}`},
	{"restJson1 __type", "application/json", `{"message":"m","__type":"%s"}`},
	{"restXml wrapped", "application/xml",
		`<ErrorResponse><Error><Type>Sender</Type><Code>%s</Code><Message>Hi</Message></Error><RequestId>foo-id</RequestId></ErrorResponse>`},
	{"restXml unwrapped (S3)", "application/xml",
		`<?xml version="1.0" encoding="UTF-8"?>` + "\n" + `<Error><Code>%s</Code><Message>Please reduce your request rate.</Message><RequestId>4442587FB7D0A2F9</RequestId><HostId>...</HostId></Error>`},
	{"awsQuery", "text/xml",
		`<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><Error><Type>Sender</Type><Code>%s</Code><Message>Rate exceeded</Message></Error><RequestId>r</RequestId></ErrorResponse>`},
	{"ec2Query", "text/xml;charset=UTF-8",
		`<Response><Errors><Error><Code>%s</Code><Message>Hi</Message></Error></Errors><RequestID>foo-id</RequestID></Response>`},
	{"no Content-Type, JSON", "", `  {"__type":"%s"}`},
	{"no Content-Type, XML", "", `<Error><Code>%s</Code></Error>`},
}

// awsBodyResponse returns a response whose error code is only in its body.
func awsBodyResponse(status int, contentType, body string) (*http.Response, *testkit.CountingBody) {
	h := http.Header{"X-Amzn-Requestid": {"N4UIOV1N0TSSC6KJ0HDD5QVFK7VV4KQNSO5AEMVJF66Q9ASUAAJG"}}
	if contentType != "" {
		h.Set("Content-Type", contentType)
	}
	b := testkit.NewCountingBody(body)
	return &http.Response{StatusCode: status, Header: h, Body: b, ContentLength: int64(len(body))}, b
}

func TestAWSResponseErrorCodeWireForms(t *testing.T) {
	for _, form := range awsWireForms {
		t.Run(form.name, func(t *testing.T) {
			body := fmt.Sprintf(form.body, "FooError")
			resp, _ := awsBodyResponse(400, form.contentType, body)
			assert.Equal(t, "FooError", ResponseErrorCode(resp))
			got, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			assert.Equal(t, body, string(got), "the caller gets the body byte for byte")
		})
	}
}

// awsResponseErrorCodeTests is shared by TestAWSResponseErrorCode and the
// seed corpus of FuzzAWSResponseErrorCode.
var awsResponseErrorCodeTests = []struct {
	name        string
	status      int
	header      http.Header
	contentType string
	body        string
	want        string
	read        bool // the body was peeked
}{
	{name: "header first", status: 400, header: http.Header{"X-Amzn-Errortype": {"ThrottlingException"}},
		contentType: "application/x-amz-json-1.0", body: `{"__type":"ValidationException"}`, want: "ThrottlingException"},
	{name: "query error header", status: 400, header: http.Header{"X-Amzn-Query-Error": {"AWS.SimpleQueueService.NonExistentQueue;Sender"}},
		contentType: "application/x-amz-json-1.0", body: `{"__type":"com.amazonaws.sqs#QueueDoesNotExist"}`, want: "AWS.SimpleQueueService.NonExistentQueue"},
	{name: "code before __type", status: 500, contentType: "application/json", body: `{"__type":"A","code":"B"}`, want: "B", read: true},
	{name: "empty code falls back to __type", status: 500, contentType: "application/json", body: `{"code":"","__type":"A"}`, want: "A", read: true},
	{name: "nested code does not count", status: 500, contentType: "application/json", body: `{"error":{"code":"ThrottlingException"}}`, read: true},
	{name: "non-string code", status: 500, contentType: "application/json", body: `{"code":503}`, read: true},
	{name: "array", status: 500, contentType: "application/json", body: `["ThrottlingException"]`, read: true},
	{name: "cut short after the code", status: 400, contentType: "application/x-amz-json-1.0", body: `{"__type":"ThrottlingException","message":"Rat`, want: "ThrottlingException", read: true},
	{name: "Code outside Error", status: 400, contentType: "application/xml", body: `<Response><Code>SlowDown</Code></Response>`, read: true},
	{name: "malformed XML", status: 400, contentType: "application/xml", body: `<Error><Code>SlowDown</Cod`, read: true},
	{name: "HTML from a load balancer", status: 503, contentType: "text/html", body: `<html><body>503 Service Unavailable</body></html>`},
	{name: "plain text", status: 503, contentType: "text/plain", body: `{"__type":"ThrottlingException"}`},
	{name: "no Content-Type, not JSON or XML", status: 502, body: `Bad Gateway`, read: true},
	{name: "success", status: 200, contentType: "application/x-amz-json-1.0", body: `{"__type":"ThrottlingException"}`},
	{name: "redirect", status: 301, contentType: "application/xml", body: `<Error><Code>PermanentRedirect</Code></Error>`},
	{name: "code past the limit", status: 400, contentType: "application/json",
		body: `{"message":"` + strings.Repeat("x", wire.PeekLimit) + `","__type":"ThrottlingException"}`, read: true},

	// Hostile documents.
	{name: "JSON nested past the decoder's depth", status: 400, contentType: "application/json",
		body: `{"a":` + strings.Repeat("[", 10001) + `,"__type":"ThrottlingException"}`, read: true},
	{name: "JSON with a code of invalid UTF-8", status: 400, contentType: "application/json", body: "{\"code\":\"ns#\xff:uri\"}", want: "\ufffd", read: true},
	{name: "JSON with a number past float64", status: 400, contentType: "application/json", body: `{"a":1e400,"code":"A"}`, want: "A", read: true},
	{name: "XML nested past the decoder's depth", status: 400, contentType: "application/xml",
		body: strings.Repeat("<a>", 10000) + "<Error><Code>SlowDown</Code></Error>", read: true},
	{name: "XML in another encoding", status: 400, contentType: "text/xml",
		body: `<?xml version="1.0" encoding="ISO-8859-1"?><Error><Code>SlowDown</Code></Error>`, read: true},
	{name: "XML with spaces around the code", status: 400, contentType: "text/xml", body: "<Error><Code> \tSlowDown\n</Code></Error>", want: "SlowDown\n", read: true},
	{name: "CBOR cut short", status: 400, contentType: "application/cbor", body: "\xa1\x66__type\x7b\xff\xff\xff\xff\xff\xff\xff\xff\x61X\xff", read: true},
	{name: "upper-case media type with parameters", status: 400, contentType: " Application/JSON ; charset=utf-8", body: `{"code":"A"}`, want: "A", read: true},
	{name: "no Content-Type, JSON after white space", status: 400, body: " \r\n\t{\"code\":\"A\"}", want: "A", read: true},
	{name: "no Content-Type, empty body", status: 400, body: "", read: true},
	{name: "a status past 599", status: 999, contentType: "application/json", body: `{"code":"A"}`, want: "A", read: true},
}

func TestAWSResponseErrorCode(t *testing.T) {
	for _, tt := range awsResponseErrorCodeTests {
		t.Run(tt.name, func(t *testing.T) {
			resp, _ := awsBodyResponse(tt.status, tt.contentType, tt.body)
			maps.Copy(resp.Header, tt.header)
			assert.Equal(t, tt.want, ResponseErrorCode(resp))
			peeked := wasPeeked(resp)
			assert.Equal(t, tt.read, peeked, "body peeked")
			got, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			assert.Equal(t, tt.body, string(got), "the caller gets the body byte for byte")
		})
	}
}

// FuzzAWSResponseErrorCode serves any body with any status, Content-Type
// and code headers, and checks that ResponseErrorCode takes a header's
// code first, reads a body only for an error status and a media type it
// knows (or, without one, a body that starts as JSON or XML does), reads it
// with the reader of that format, and leaves it byte for byte to the
// caller.
func FuzzAWSResponseErrorCode(f *testing.F) {
	for _, tt := range awsResponseErrorCodeTests {
		f.Add(uint16(tt.status), tt.contentType, false, tt.header.Get("X-Amzn-Errortype"), tt.header.Get("X-Amzn-Query-Error"), []byte(tt.body))
	}
	for _, form := range awsWireForms {
		f.Add(uint16(400), form.contentType, false, "", "", []byte(fmt.Sprintf(form.body, "FooError")))
	}
	f.Add(uint16(400), "", true, "", "", cloudWatchThrottle)
	f.Fuzz(func(t *testing.T, status uint16, contentType string, smithy bool, errorType, queryError string, body []byte) {
		// In a synctest bubble, the peek's 100 ms wait ends only once the
		// read ahead is blocked, however busy the machine.
		synctest.Test(t, func(t *testing.T) {
			checkAWSResponseErrorCode(t, status, contentType, smithy, errorType, queryError, body)
		})
	})
}

// checkAWSResponseErrorCode is FuzzAWSResponseErrorCode's check of one
// response.
func checkAWSResponseErrorCode(t *testing.T, status uint16, contentType string, smithy bool, errorType, queryError string, body []byte) {
	h := testkit.HeaderOf(map[string]string{"Content-Type": contentType, "X-Amzn-Errortype": errorType, "X-Amzn-Query-Error": queryError})
	if smithy {
		h.Set("Smithy-Protocol", "rpc-v2-cbor")
	}
	resp := &http.Response{StatusCode: int(status), Header: h, Body: testkit.NewCountingBody(string(body)), ContentLength: -1}
	code := ResponseErrorCode(resp)

	prefix := body[:min(len(body), wire.PeekLimit)]
	media := strings.ToLower(strings.Trim(strings.SplitN(contentType, ";", 2)[0], " \t"))
	kind := "none"
	switch {
	case smithy:
		kind = "cbor"
	case contentType == "":
		switch b := bytes.TrimLeft(prefix, " \t\r\n"); {
		case len(b) > 0 && b[0] == '{':
			kind = "json"
		case len(b) > 0 && b[0] == '<':
			kind = "xml"
		}
	case media == "application/json" || media == "application/x-amz-json-1.0" || media == "application/x-amz-json-1.1":
		kind = "json"
	case media == "text/xml" || media == "application/xml":
		kind = "xml"
	case media == "application/cbor":
		kind = "cbor"
	}
	want, read := ErrorCode(h), false
	if want == "" && status >= 400 && (kind != "none" || contentType == "" && !smithy) {
		read = true
		switch kind {
		case "json":
			want = awsCodeName(jsonErrorCode(prefix))
		case "xml":
			want = strings.Trim(xmlErrorCode(prefix), " \t")
		case "cbor":
			want = awsCodeName(cborErrorType(prefix))
		}
	}
	if code != want {
		t.Fatalf("status %d, %q, body %q: got code %q, want %q", status, h, body, code, want)
	}
	if code != strings.Trim(code, " \t") {
		t.Fatalf("code %q has spaces or tabs around it", code)
	}
	if peeked := wasPeeked(resp); peeked != read {
		t.Fatalf("status %d, %q: body peeked %t, want %t", status, h, peeked, read)
	}
	if got, err := io.ReadAll(resp.Body); err != nil || !bytes.Equal(got, body) {
		t.Fatalf("the caller got %q (%v), want %q", got, err, body)
	}
}

// jsonErrorCodeTests is shared by TestJSONErrorCode and the seed corpus of
// FuzzJSONErrorCode.
var jsonErrorCodeTests = []struct {
	name, doc, want string
}{
	{"code", `{"code":"A"}`, "A"},
	{"__type", `{"__type":"A"}`, "A"},
	{"Code", `{"Code":"A"}`, "A"},
	{"CODE", `{"CODE":"A"}`, "A"},
	{"code before __type", `{"__type":"A","code":"B"}`, "B"},
	{"empty code falls back to __type", `{"code":"","__type":"A"}`, "A"},
	{"null code falls back to __type", `{"code":null,"__type":"T"}`, "T"},
	{"the first __type", `{"__type":"A","__type":"B"}`, "A"},
	{"an empty __type, then another", `{"__type":"","__type":"B"}`, "B"},
	{"a __type that is not a string, then another", `{"__type":1,"__type":"B"}`, "B"},
	{"the first code", `{"code":"A"}{"code":"B"}`, "A"},
	{"spaces", " {\"code\" : \"A\" } ", "A"},
	{"escapes", `{"code":"\u0041\n"}`, "A\n"},
	{"a code that is a number", `{"code":503}`, ""},
	{"a code that is an array", `{"code":["A"]}`, ""},
	{"nested", `{"error":{"code":"A"}}`, ""},
	{"an array", `["A"]`, ""},
	{"a string", `"code"`, ""},
	{"empty", ``, ""},
	{"white space", " \t\r\n", ""},
	{"an open brace", `{`, ""},
	{"cut short after the member", `{"__type":"A"`, "A"},
	{"cut short after a comma", `{"__type":"A",`, "A"},
	{"cut short in a later member", `{"__type":"A","message":"Rat`, "A"},
	{"cut short in the member", `{"message":"x","__type":"A`, ""},
	{"a trailing comma", `{"__type":"A",}`, "A"},
	{"a byte order mark", "\ufeff{\"code\":\"A\"}", ""},
	{"a lone surrogate", `{"code":"\ud800"}`, "\ufffd"},
	{"invalid UTF-8", "{\"code\":\"\xff\"}", "\ufffd"},
	{"invalid UTF-8 in a key", "{\"\xff\":1,\"code\":\"A\"}", "A"},
	{"a number past float64", `{"a":1e400,"code":"A"}`, "A"},
	{"an integer past int64", `{"a":99999999999999999999999,"code":"A"}`, "A"},
	{"nested past the decoder's depth before the code", `{"a":` + strings.Repeat("[", 10001) + `,"code":"A"}`, ""},
	{"nested past the decoder's depth after the code", `{"code":"A","a":` + strings.Repeat("[", 10001), "A"},
	{"nested a hundred deep before the code", `{"a":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `,"code":"A"}`, "A"},
	{"a thousand members before the code", `{` + strings.Repeat(`"a":1,`, 1000) + `"code":"A"}`, "A"},
	{"a long code", `{"code":"` + strings.Repeat("x", 10000) + `"}`, strings.Repeat("x", 10000)},
}

func TestJSONErrorCode(t *testing.T) {
	for _, tt := range jsonErrorCodeTests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, jsonErrorCode([]byte(tt.doc)))
		})
	}
}

// FuzzJSONErrorCode checks that jsonErrorCode reads a code only from a
// document that starts as an object, gives valid UTF-8 no longer than
// JSON's escapes allow, and finds any code written by encoding/json in the
// places the AWS protocols put it, and nowhere else, whatever valid JSON
// comes before it.
func FuzzJSONErrorCode(f *testing.F) {
	for _, tt := range jsonErrorCodeTests {
		f.Add([]byte(tt.doc), tt.want)
	}
	f.Fuzz(func(t *testing.T, doc []byte, code string) {
		got := jsonErrorCode(doc)
		if got != "" && !bytes.HasPrefix(bytes.TrimLeft(doc, " \t\r\n"), []byte("{")) {
			t.Fatalf("jsonErrorCode(%q) = %q, from a document that is not an object", doc, got)
		}
		if !utf8.ValidString(got) || len(got) > 3*len(doc) {
			t.Fatalf("jsonErrorCode(%q) = %q: not valid UTF-8, or longer than the document allows", doc, got)
		}

		m, err := json.Marshal(code)
		if err != nil {
			t.Fatal(err)
		}
		var want string
		if err := json.Unmarshal(m, &want); err != nil {
			t.Fatal(err)
		}
		str := string(m)
		tests := []struct{ doc, want string }{
			{`{"code":` + str + `}`, want},
			{`{"__type":` + str + `,"message":"m"}`, want},
			{`{"__type":"T","Code":` + str + `}`, cmp.Or(want, "T")},
			{`{"error":{"code":` + str + `}}`, ""},
			{`{"error":{"code":` + str + `},"__type":` + str + `}`, want},
			{`{"message":` + string(doc) + `,"code":` + str + `}`, want},
		}
		for i, tt := range tests {
			if i == len(tests)-1 && !json.Valid([]byte(tt.doc)) {
				continue // the fuzzed document is not a JSON value
			}
			if got := jsonErrorCode([]byte(tt.doc)); got != tt.want {
				t.Fatalf("jsonErrorCode(%q) = %q, want %q", tt.doc, got, tt.want)
			}
		}
	})
}

// xmlErrorCodeTests is shared by TestXMLErrorCode and the seed corpus of
// FuzzXMLErrorCode.
var xmlErrorCodeTests = []struct {
	name, doc, code, root string
}{
	{"S3", `<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>`, "SlowDown", "Error"},
	{"query", `<ErrorResponse><Error><Type>Sender</Type><Code>Throttling</Code></Error></ErrorResponse>`, "Throttling", "ErrorResponse"},
	{"EC2", `<Response><Errors><Error><Code>RequestLimitExceeded</Code></Error></Errors></Response>`, "RequestLimitExceeded", "Response"},
	{"declaration", `<?xml version="1.0" encoding="UTF-8"?>` + "\n" + `<Error><Code>X</Code></Error>`, "X", "Error"},
	{"another encoding", `<?xml version="1.0" encoding="ISO-8859-1"?><Error><Code>X</Code></Error>`, "", ""},
	{"a byte order mark", "\ufeff<Error><Code>X</Code></Error>", "X", "Error"},
	{"a comment first", `<!-- c --><Error><Code>X</Code></Error>`, "X", "Error"},
	{"text first", `text<Error><Code>X</Code></Error>`, "X", "Error"},
	{"namespaces", `<s3:Error xmlns:s3="urn:x"><s3:Code>X</s3:Code></s3:Error>`, "X", "Error"},
	{"entities", `<Error><Code>A&amp;B&foo;&#x41;</Code></Error>`, "A&B&foo;A", "Error"},
	{"CDATA", `<Error><Code><![CDATA[X]]></Code></Error>`, "X", "Error"},
	{"an element in the code", `<Error><Code><b>X</b>Y</Code></Error>`, "Y", "Error"},
	{"attributes", `<Error><Code a="1">X</Code></Error>`, "X", "Error"},
	{"spaces around the code", "<Error><Code> X\t</Code></Error>", " X\t", "Error"},
	{"a line break", "<Error><Code>a\r\nb</Code></Error>", "a\nb", "Error"},
	{"the first code", `<Error><Code>X</Code><Code>Y</Code></Error>`, "X", "Error"},
	{"an empty code", `<Error><Code/></Error>`, "", "Error"},
	{"no code", `<Error/>`, "", "Error"},
	{"Code outside Error", `<Response><Code>X</Code></Response>`, "", "Response"},
	{"Code below Error's child", `<Error><Detail><Code>X</Code></Detail></Error>`, "", "Error"},
	{"not closed", `<Error><Code>X</Code>`, "X", "Error"},
	{"closed wrongly", `<Error><Code>X</Error>`, "X", "Error"},
	{"cut short in the code", `<Error><Code>SlowDown`, "", "Error"},
	{"cut short in the end tag", `<Error><Code>SlowDown</Cod`, "", "Error"},
	{"cut short in the root", `<Err`, "", ""},
	{"HTML", `<html><body>503 Service Unavailable</body></html>`, "", "html"},
	{"a DOCTYPE with an entity", `<!DOCTYPE x [<!ENTITY a "aaaa">]><Error><Code>&a;</Code></Error>`, "&a;", "Error"},
	{"invalid UTF-8 in the code", "<Error><Code>\xff</Code></Error>", "", "Error"},
	{"invalid UTF-8 in a name", "<Er\xffror><Code>X</Code></Error>", "", ""},
	{"empty", ``, "", ""},
	{"white space", " \r\n", "", ""},
	{"not XML", `Bad Gateway`, "", ""},
	{"nested a hundred deep", strings.Repeat("<a>", 100) + "<Error><Code>Deep</Code></Error>", "Deep", "a"},
	{"nested past the decoder's depth", strings.Repeat("<a>", 10000) + "<Error><Code>Deep</Code></Error>", "", "a"},
	{"a thousand attributes", `<Error` + strings.Repeat(` a="1"`, 1000) + `><Code>X</Code></Error>`, "X", "Error"},
	{"a long code", `<Error><Code>` + strings.Repeat("x", 10000) + `</Code></Error>`, strings.Repeat("x", 10000), "Error"},
}

func TestXMLErrorCode(t *testing.T) {
	for _, tt := range xmlErrorCodeTests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.code, xmlErrorCode([]byte(tt.doc)), "code")
			assert.Equal(t, tt.root, xmlRootElement([]byte(tt.doc)), "root")
		})
	}
}

// FuzzXMLErrorCode checks that xmlRootElement names an element of the
// document, which bytes after it do not change; that xmlErrorCode is no
// longer than the document; and that both find a code written by
// encoding/xml in each of the places the AWS protocols put it, whatever
// text comes before it.
func FuzzXMLErrorCode(f *testing.F) {
	for _, tt := range xmlErrorCodeTests {
		f.Add([]byte(tt.doc), tt.code)
	}
	f.Fuzz(func(t *testing.T, doc []byte, code string) {
		root := xmlRootElement(doc)
		if root != "" {
			if !bytes.Contains(doc, []byte(root)) {
				t.Fatalf("xmlRootElement(%q) = %q, not in the document", doc, root)
			}
			if again := xmlRootElement(append(doc[:len(doc):len(doc)], "<x>&bad;</y>"...)); again != root {
				t.Fatalf("xmlRootElement(%q) = %q, but %q with bytes after it", doc, root, again)
			}
		}
		if got := xmlErrorCode(doc); len(got) > len(doc) || got != "" && !bytes.Contains(doc, []byte("Code")) {
			t.Fatalf("xmlErrorCode(%q) = %q, not from a Code element of the document", doc, got)
		}

		var esc, text strings.Builder
		if err := xml.EscapeText(&esc, []byte(code)); err != nil {
			t.Fatal(err)
		}
		if err := xml.EscapeText(&text, doc); err != nil {
			t.Fatal(err)
		}
		want := xmlChars(code)
		for _, tt := range []struct{ doc, root string }{
			{`<Error><Code>` + esc.String() + `</Code></Error>`, "Error"},
			{`<?xml version="1.0" encoding="UTF-8"?>` + "\n" + `<Error><Message>` + text.String() + `</Message><Code>` + esc.String() + `</Code></Error>`, "Error"},
			{`<ErrorResponse><Error><Type>Sender</Type><Code>` + esc.String() + `</Code></Error><RequestId>r</RequestId></ErrorResponse>`, "ErrorResponse"},
			{`<Response><Errors><Error><Code>` + esc.String() + `</Code></Error></Errors></Response>`, "Response"},
		} {
			if got := xmlErrorCode([]byte(tt.doc)); got != want {
				t.Fatalf("xmlErrorCode(%q) = %q, want %q", tt.doc, got, want)
			}
			if got := xmlRootElement([]byte(tt.doc)); got != tt.root {
				t.Fatalf("xmlRootElement(%q) = %q, want %q", tt.doc, got, tt.root)
			}
		}
	})
}

// xmlChars returns s as xml.EscapeText writes it and a decoder reads it
// back: a character XML cannot hold, or a byte of invalid UTF-8, becomes
// U+FFFD.
func xmlChars(s string) string {
	var b strings.Builder
	for i, r := range s {
		valid := r == '\t' || r == '\n' || r == '\r' || r >= 0x20 && r <= 0xd7ff || r >= 0xe000 && r <= 0xfffd || r >= 0x10000 && r <= 0x10ffff
		if !valid || r == utf8.RuneError && !strings.HasPrefix(s[i:], "\ufffd") {
			r = '\ufffd'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// TestAWSErrorClassifierBodyCodes checks every throttling and transient
// code in every wire form: retried, throttles with the Throttle facet; and
// final codes final, their documents intact.
func TestAWSErrorClassifierBodyCodes(t *testing.T) {
	codes := []struct {
		code   string
		status int
		want   classify.Verdict
	}{
		{"ThrottlingException", 400, classify.Verdict{Decision: classify.Retry, Throttle: true}},
		{"ProvisionedThroughputExceededException", 400, classify.Verdict{Decision: classify.Retry, Throttle: true}},
		{"Throttling", 400, classify.Verdict{Decision: classify.Retry, Throttle: true}},
		{"ThrottledException", 400, classify.Verdict{Decision: classify.Retry, Throttle: true}},
		{"RequestThrottledException", 400, classify.Verdict{Decision: classify.Retry, Throttle: true}},
		{"TooManyRequestsException", 400, classify.Verdict{Decision: classify.Retry, Throttle: true}},
		{"TransactionInProgressException", 400, classify.Verdict{Decision: classify.Retry, Throttle: true}},
		{"RequestLimitExceeded", 503, classify.Verdict{Decision: classify.Retry, Throttle: true}},
		{"BandwidthLimitExceeded", 400, classify.Verdict{Decision: classify.Retry, Throttle: true}},
		{"LimitExceededException", 400, classify.Verdict{Decision: classify.Retry, Throttle: true}},
		{"RequestThrottled", 400, classify.Verdict{Decision: classify.Retry, Throttle: true}},
		{"SlowDown", 503, classify.Verdict{Decision: classify.Retry, Throttle: true}},
		{"PriorRequestNotComplete", 400, classify.Verdict{Decision: classify.Retry, Throttle: true}},
		{"EC2ThrottledException", 400, classify.Verdict{Decision: classify.Retry, Throttle: true}},
		{"ThrottlingException", 500, classify.Verdict{Decision: classify.Retry, Throttle: true}},
		{"RequestTimeout", 400, classify.Verdict{Decision: classify.Retry}},
		{"RequestTimeoutException", 400, classify.Verdict{Decision: classify.Retry}},
		{"ConditionalCheckFailedException", 400, classify.Verdict{Decision: classify.DontRetry}},
		{"ValidationException", 400, classify.Verdict{Decision: classify.DontRetry}},
		{"NoSuchKey", 404, classify.Verdict{Decision: classify.DontRetry}},
		{"AccessDenied", 403, classify.Verdict{Decision: classify.DontRetry}},
		{"InternalServerError", 500, classify.Verdict{}},
		{"ServiceUnavailable", 503, classify.Verdict{}},
	}
	req := testkit.Get(t, "http://aws.test/")
	for _, c := range codes {
		for _, form := range awsWireForms {
			t.Run(c.code+"/"+form.name, func(t *testing.T) {
				body := fmt.Sprintf(form.body, c.code)
				resp, _ := awsBodyResponse(c.status, form.contentType, body)
				assert.Equal(t, c.want, Classifier().Classify(req, resp, nil))
				got, err := io.ReadAll(resp.Body)
				require.NoError(t, err)
				assert.Equal(t, body, string(got))
			})
		}
	}
}

// TestAWSErrorClassifierStalledBody checks that a body that stalls holds
// the decision up 100 ms at most, then abstains, and that the caller
// still gets every byte.
func TestAWSErrorClassifierStalledBody(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		body := testkit.NewPausingBody(`{"message":"Rate exceeded","__ty`, `pe":"ThrottlingException"}`)
		resp := &http.Response{StatusCode: 400, Header: http.Header{"Content-Type": {"application/x-amz-json-1.0"}}, Body: body, ContentLength: -1}
		start := time.Now()
		v := Classifier().Classify(testkit.Get(t, "http://aws.test/"), resp, nil)
		assert.Equal(t, 100*time.Millisecond, time.Since(start))
		assert.Equal(t, classify.Verdict{}, v, "no code read in time: no opinion")
		close(body.Release)
		got, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		assert.Equal(t, `{"message":"Rate exceeded","__type":"ThrottlingException"}`, string(got))
		resp.Body.Close()
	})
}

// TestAWSErrorClassifierReadsNoSuccess checks that a success, and an error
// whose code is in a header, are judged without reading or wrapping the
// body, and without allocating.
func TestAWSErrorClassifierReadsNoSuccess(t *testing.T) {
	req := testkit.Get(t, "http://dynamodb.test/")
	ok, _ := awsBodyResponse(200, "application/x-amz-json-1.0", `{"Item":{}}`)
	inHeader, _ := awsBodyResponse(400, "application/x-amz-json-1.0", `{"__type":"ThrottlingException"}`)
	inHeader.Header.Set("X-Amzn-Errortype", "ThrottlingException")
	c := Classifier()
	allocs := testing.AllocsPerRun(100, func() {
		c.Classify(req, ok, nil)
		c.Classify(req, inHeader, nil)
	})
	assert.Zero(t, allocs)
	for _, resp := range []*http.Response{ok, inHeader} {
		peeked := wasPeeked(resp)
		assert.False(t, peeked)
	}
}

func BenchmarkAWSErrorClassifier(b *testing.B) {
	req, _ := http.NewRequest(http.MethodPost, "http://dynamodb.test/", nil)
	const doc = `{"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException","message":"The level of configured provisioned throughput for the table was exceeded."}`
	c := Classifier()
	b.Run("success", func(b *testing.B) {
		resp, _ := awsBodyResponse(200, "application/x-amz-json-1.0", `{}`)
		b.ReportAllocs()
		for b.Loop() {
			c.Classify(req, resp, nil)
		}
	})
	b.Run("code in header", func(b *testing.B) {
		resp, _ := awsBodyResponse(400, "application/x-amz-json-1.0", doc)
		resp.Header.Set("X-Amzn-Errortype", "ProvisionedThroughputExceededException")
		b.ReportAllocs()
		for b.Loop() {
			c.Classify(req, resp, nil)
		}
	})
	b.Run("code in JSON body", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			resp, _ := awsBodyResponse(400, "application/x-amz-json-1.0", doc)
			c.Classify(req, resp, nil)
		}
	})
	b.Run("code in XML body", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			resp, _ := awsBodyResponse(503, "application/xml", `<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message><RequestId>4442587FB7D0A2F9</RequestId></Error>`)
			c.Classify(req, resp, nil)
		}
	})
}

// s3CopyResult is the body of a CopyObject that succeeded.
const s3CopyResult = `<?xml version="1.0" encoding="UTF-8"?>
<CopyObjectResult><LastModified>2026-11-25T06:40:00.000Z</LastModified><ETag>"9b2cf535f27731c974343645a3985328"</ETag></CopyObjectResult>`

// s3ErrorDoc is the body of an S3 error with code.
func s3ErrorDoc(code string) string {
	return `<?xml version="1.0" encoding="UTF-8"?>` + "\n" +
		`<Error><Code>` + code + `</Code><Message>We encountered an internal error. Please try again.</Message>` +
		`<RequestId>656c76696e6727732072657175657374</RequestId><HostId>Uuag1LuByRx9e6j5Onimru9pO4ZVKnJ2Qz7/C1NPcfTWAtRPfTaOFg==</HostId></Error>`
}

func TestAWSErrorClassifierS3ErrorIn200(t *testing.T) {
	copyObject := func() *http.Request {
		r := testkit.Get(t, "http://s3.test/photos/cat-copy.jpg?x-id=CopyObject")
		r.Method = http.MethodPut
		r.Header.Set("X-Amz-Copy-Source", "photos/cat.jpg")
		return r
	}
	method := func(m, url string) func() *http.Request {
		return func() *http.Request {
			r := testkit.Get(t, url)
			r.Method = m
			return r
		}
	}
	uploadPartCopy := func() *http.Request {
		r := copyObject()
		r.URL.RawQuery = "partNumber=2&uploadId=VXBsb2FkIElE&x-id=UploadPartCopy"
		return r
	}
	complete := method(http.MethodPost, "http://s3.test/photos/big.bin?uploadId=VXBsb2FkIElE&x-id=CompleteMultipartUpload")
	tests := []struct {
		name        string
		req         func() *http.Request
		contentType string
		body        string
		want        classify.Verdict
		read        bool // whether the body is peeked at
	}{
		{"CopyObject InternalError", copyObject, "application/xml", s3ErrorDoc("InternalError"), classify.Verdict{Decision: classify.Retry}, true},
		{"CopyObject SlowDown", copyObject, "application/xml", s3ErrorDoc("SlowDown"), classify.Verdict{Decision: classify.Retry, Throttle: true}, true},
		{"CopyObject after keep-alive whitespace", copyObject, "application/xml", "\n \n \n" + s3ErrorDoc("InternalError"), classify.Verdict{Decision: classify.Retry}, true},
		{"CopyObject AccessDenied, as a 500", copyObject, "application/xml", s3ErrorDoc("AccessDenied"), classify.Verdict{Decision: classify.Retry}, true},
		{"CopyObject without a Content-Type", copyObject, "", s3ErrorDoc("InternalError"), classify.Verdict{Decision: classify.Retry}, true},
		{"CopyObject result", copyObject, "application/xml", s3CopyResult, classify.Verdict{}, true},
		{"CopyObject cut before the root", copyObject, "application/xml", "\n \n", classify.Verdict{}, true},
		{"CopyObject, Error not the root", copyObject, "application/xml", "<CopyObjectResult><Error><Code>InternalError</Code></Error></CopyObjectResult>", classify.Verdict{}, true},
		{"CopyObject, not XML", copyObject, "text/plain", s3ErrorDoc("InternalError"), classify.Verdict{}, false},
		{"UploadPartCopy InternalError", uploadPartCopy, "application/xml", s3ErrorDoc("InternalError"), classify.Verdict{Decision: classify.Retry}, true},
		{"CompleteMultipartUpload InternalError", complete, "application/xml", s3ErrorDoc("InternalError"), classify.Verdict{Decision: classify.Retry}, true},
		{"GetObject of an XML object", method(http.MethodGet, "http://s3.test/photos/error.xml?x-id=GetObject"), "application/xml", s3ErrorDoc("InternalError"), classify.Verdict{}, false},
		{"PutObject", method(http.MethodPut, "http://s3.test/photos/cat.jpg?x-id=PutObject"), "application/xml", s3ErrorDoc("InternalError"), classify.Verdict{}, false},
		{"CreateMultipartUpload", method(http.MethodPost, "http://s3.test/photos/big.bin?uploads&x-id=CreateMultipartUpload"), "application/xml", s3ErrorDoc("InternalError"), classify.Verdict{}, false},
		{"a POST with uploadIds", method(http.MethodPost, "http://s3.test/?uploadIds=1"), "application/xml", s3ErrorDoc("InternalError"), classify.Verdict{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, _ := awsBodyResponse(http.StatusOK, tt.contentType, tt.body)
			assert.Equal(t, tt.want, Classifier().Classify(tt.req(), resp, nil))
			peeked := wasPeeked(resp)
			assert.Equal(t, tt.read, peeked, "the body was peeked at")
			got, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			assert.Equal(t, tt.body, string(got), "the caller gets the body byte for byte")
		})
	}
}

func TestVendorClassifiersAllocs(t *testing.T) {
	req := testkit.Get(t, "http://svc.test/")
	aws := awsResponse(400, "com.amazonaws.dynamodb.v20120810#ThrottlingException:http://x/")
	s3 := &http.Response{StatusCode: 503, Header: http.Header{"X-Amz-Error-Code": {"SlowDown"}}, Body: http.NoBody}
	gh := &http.Response{StatusCode: 403, Header: http.Header{"Retry-After": {"30"}, "Date": {"Mon, 23 Nov 2026 12:00:00 GMT"}}, Body: http.NoBody}
	primary := &http.Response{StatusCode: 403, Header: http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {"1795435230"}}, Body: http.NoBody}
	awsC, ghC := Classifier(), githubretry.Classifier()
	allocs := testing.AllocsPerRun(100, func() {
		awsC.Classify(req, aws, nil)
		awsC.Classify(req, s3, nil)
		ghC.Classify(req, gh, nil)
		ghC.Classify(req, primary, nil)
	})
	assert.Zero(t, allocs)
}
