package retryhttp

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAWSErrorCode(t *testing.T) {
	tests := []struct {
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
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, AWSErrorCode(tt.header))
		})
	}
}

func FuzzAWSErrorCode(f *testing.F) {
	f.Add("ThrottlingException", "")
	f.Add("com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException:http://x/", "")
	f.Add("ValidationException:http://a#b", "")
	f.Add("a#b#c", "SlowDown")
	f.Add("", " NoSuchKey ")
	f.Fuzz(func(t *testing.T, errorType, errorCode string) {
		h := http.Header{}
		if errorType != "" {
			h["X-Amzn-Errortype"] = []string{errorType}
		}
		if errorCode != "" {
			h["X-Amz-Error-Code"] = []string{errorCode}
		}
		code := AWSErrorCode(h)
		if code == "" {
			return
		}
		if !strings.Contains(errorType, code) && !strings.Contains(errorCode, code) {
			t.Fatalf("code %q is in neither header", code)
		}
		if code != trimOWS(code) {
			t.Fatalf("code %q has spaces around it", code)
		}
		if strings.Contains(errorType, code) && errorCode == "" && strings.Contains(code, ":") {
			t.Fatalf("code %q kept the URI of %q", code, errorType)
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
	retry := Verdict{Decision: Retry}
	throttle := Verdict{Decision: Retry, Throttle: true}
	final := Verdict{Decision: DontRetry}
	tests := []struct {
		name string
		resp *http.Response
		want Verdict
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
		{"429 with another code", awsResponse(429, "SomethingNew"), Verdict{}},
		{"408 with another code", awsResponse(408, "SomethingNew"), Verdict{}},
		{"S3 missing key", &http.Response{StatusCode: 404, Header: http.Header{"X-Amz-Error-Code": {"NoSuchKey"}}}, final},
		{"503 without a code: SlowDown", awsResponse(503, ""), throttle},
		{"503 with X-Should-Retry", &http.Response{StatusCode: 503, Header: http.Header{"X-Should-Retry": {"false"}}}, Verdict{}},
		{"5xx with another code", awsResponse(500, "InternalServerError"), Verdict{}},
		{"503 with another code", awsResponse(503, "ServiceUnavailable"), Verdict{}},
		{"500 without a code", awsResponse(500, ""), Verdict{}},
		{"4xx without a code", awsResponse(400, ""), Verdict{}},
		{"429 without a code", awsResponse(429, ""), Verdict{}},
		{"success with a code", awsResponse(200, "ThrottlingException"), Verdict{}},
		{"redirect", awsResponse(307, "ThrottlingException"), Verdict{}},
	}
	req := get(t, "http://dynamodb.test/")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, AWSErrorClassifier().Classify(req, tt.resp, nil))
		})
	}
	t.Run("error", func(t *testing.T) {
		assert.Equal(t, Verdict{}, AWSErrorClassifier().Classify(req, nil, context.DeadlineExceeded))
	})
	t.Run("caller gave up", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		v := AWSErrorClassifier().Classify(req.WithContext(ctx), awsResponse(400, "ThrottlingException"), nil)
		assert.Equal(t, Verdict{}, v)
	})
}

// TestAWSErrorClassifierInTransport checks the classifier in front of the
// default chain, over a GET (an S3 GetObject's kind of request): how many
// attempts each answer gets, and that throttles are paced by the throttle
// backoff (500 ms at jitter 0.5) and other retries by the ordinary one
// (25 ms).
func TestAWSErrorClassifierInTransport(t *testing.T) {
	tests := []struct {
		name       string
		first      step
		classifier bool
		attempts   int
		delay      time.Duration
	}{
		{"throttling 400", step{status: 400, header: http.Header{"X-Amzn-Errortype": {"ThrottlingException"}}}, true, 2, 500 * time.Millisecond},
		{"throttling 400 without the classifier", step{status: 400, header: http.Header{"X-Amzn-Errortype": {"ThrottlingException"}}}, false, 1, 0},
		{"validation 400", step{status: 400, header: http.Header{"X-Amzn-Errortype": {"ValidationException"}}}, true, 1, 0},
		{"request timeout 400", step{status: 400, header: http.Header{"X-Amz-Error-Code": {"RequestTimeout"}}}, true, 2, 25 * time.Millisecond},
		{"503 without a code", step{status: 503}, true, 2, 500 * time.Millisecond},
		{"503 without a code, default chain only", step{status: 503}, false, 2, 25 * time.Millisecond},
		{"500 with a code", step{status: 500, header: http.Header{"X-Amzn-Errortype": {"InternalServerError"}}}, true, 2, 25 * time.Millisecond},
		{"404 with a code", step{status: 404, header: http.Header{"X-Amz-Error-Code": {"NoSuchKey"}}}, true, 1, 0},
		{"429 with another code", step{status: 429, header: http.Header{"X-Amzn-Errortype": {"SomethingNew"}}}, true, 2, 500 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				base := &script{steps: []step{tt.first, {status: 200}}}
				var opts []Option
				if tt.classifier {
					opts = append(opts, WithClassifier(Chain{AWSErrorClassifier(), DefaultClassifier()}))
				}
				start := time.Now()
				resp, err := newTestTransport(base, 0.5, opts...).RoundTrip(get(t, "http://s3.test/bucket/key"))
				require.NoError(t, err)
				require.Equal(t, tt.attempts, base.count())
				base.requireDiscardedClosed(t, resp)
				resp.Body.Close()
				if tt.attempts == 1 {
					assert.Equal(t, tt.first.status, resp.StatusCode)
					return
				}
				assert.Equal(t, 200, resp.StatusCode)
				assert.Equal(t, tt.delay, base.times[1].Sub(start))
			})
		})
	}
}

// TestAWSThrottledPOSTNotResent checks that the classifier does not make
// a POST resendable: DynamoDB's calls are POSTs without a key, and one
// that was throttled is resent only when declared resendable.
func TestAWSThrottledPOSTNotResent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := &script{steps: []step{{status: 400, header: http.Header{"X-Amzn-Errortype": {"ThrottlingException"}}}, {status: 200}}}
		req, body := withBody(t, t.Context(), http.MethodPost, "http://dynamodb.test/", `{"TableName":"t"}`, false)
		tr := newTestTransport(base, 0.5, WithClassifier(Chain{AWSErrorClassifier(), DefaultClassifier()}))
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		assert.Equal(t, 400, resp.StatusCode)
		assert.Equal(t, 1, base.count())
		assert.EqualValues(t, 1, body.closes.Load(), "request body closes")
		resp.Body.Close()
	})
}

// TestVendorClassifiersAllocs checks that judging a response costs no
// allocation: the classifiers read headers in place.
func TestVendorClassifiersAllocs(t *testing.T) {
	req := get(t, "http://svc.test/")
	aws := awsResponse(400, "com.amazonaws.dynamodb.v20120810#ThrottlingException:http://x/")
	s3 := &http.Response{StatusCode: 503, Header: http.Header{"X-Amz-Error-Code": {"SlowDown"}}, Body: http.NoBody}
	gh := &http.Response{StatusCode: 403, Header: http.Header{"Retry-After": {"30"}, "Date": {"Mon, 23 Nov 2026 12:00:00 GMT"}}, Body: http.NoBody}
	primary := &http.Response{StatusCode: 403, Header: http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {"1795435230"}}, Body: http.NoBody}
	awsC, ghC := AWSErrorClassifier(), GitHubRateLimitClassifier()
	allocs := testing.AllocsPerRun(100, func() {
		awsC.Classify(req, aws, nil)
		awsC.Classify(req, s3, nil)
		ghC.Classify(req, gh, nil)
		ghC.Classify(req, primary, nil)
	})
	assert.Zero(t, allocs)
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
func awsBodyResponse(status int, contentType, body string) (*http.Response, *countingBody) {
	h := http.Header{"X-Amzn-Requestid": {"N4UIOV1N0TSSC6KJ0HDD5QVFK7VV4KQNSO5AEMVJF66Q9ASUAAJG"}}
	if contentType != "" {
		h.Set("Content-Type", contentType)
	}
	b := newCountingBody(body)
	return &http.Response{StatusCode: status, Header: h, Body: b, ContentLength: int64(len(body))}, b
}

func TestAWSResponseErrorCodeWireForms(t *testing.T) {
	for _, form := range awsWireForms {
		t.Run(form.name, func(t *testing.T) {
			body := fmt.Sprintf(form.body, "FooError")
			resp, _ := awsBodyResponse(400, form.contentType, body)
			assert.Equal(t, "FooError", AWSResponseErrorCode(resp))
			got, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			assert.Equal(t, body, string(got), "the caller gets the body byte for byte")
		})
	}
}

func TestAWSResponseErrorCode(t *testing.T) {
	tests := []struct {
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
			body: `{"message":"` + strings.Repeat("x", PeekLimit) + `","__type":"ThrottlingException"}`, read: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, _ := awsBodyResponse(tt.status, tt.contentType, tt.body)
			maps.Copy(resp.Header, tt.header)
			assert.Equal(t, tt.want, AWSResponseErrorCode(resp))
			_, peeked := resp.Body.(*peekedBody)
			assert.Equal(t, tt.read, peeked, "body peeked")
			got, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			assert.Equal(t, tt.body, string(got), "the caller gets the body byte for byte")
		})
	}
}

// TestAWSErrorClassifierBodyCodes checks every throttling and transient
// code in every wire form: retried, throttles with the Throttle facet; and
// final codes final, their documents intact.
func TestAWSErrorClassifierBodyCodes(t *testing.T) {
	codes := []struct {
		code   string
		status int
		want   Verdict
	}{
		{"ThrottlingException", 400, Verdict{Decision: Retry, Throttle: true}},
		{"ProvisionedThroughputExceededException", 400, Verdict{Decision: Retry, Throttle: true}},
		{"Throttling", 400, Verdict{Decision: Retry, Throttle: true}},
		{"ThrottledException", 400, Verdict{Decision: Retry, Throttle: true}},
		{"RequestThrottledException", 400, Verdict{Decision: Retry, Throttle: true}},
		{"TooManyRequestsException", 400, Verdict{Decision: Retry, Throttle: true}},
		{"TransactionInProgressException", 400, Verdict{Decision: Retry, Throttle: true}},
		{"RequestLimitExceeded", 503, Verdict{Decision: Retry, Throttle: true}},
		{"BandwidthLimitExceeded", 400, Verdict{Decision: Retry, Throttle: true}},
		{"LimitExceededException", 400, Verdict{Decision: Retry, Throttle: true}},
		{"RequestThrottled", 400, Verdict{Decision: Retry, Throttle: true}},
		{"SlowDown", 503, Verdict{Decision: Retry, Throttle: true}},
		{"PriorRequestNotComplete", 400, Verdict{Decision: Retry, Throttle: true}},
		{"EC2ThrottledException", 400, Verdict{Decision: Retry, Throttle: true}},
		{"ThrottlingException", 500, Verdict{Decision: Retry, Throttle: true}},
		{"RequestTimeout", 400, Verdict{Decision: Retry}},
		{"RequestTimeoutException", 400, Verdict{Decision: Retry}},
		{"ConditionalCheckFailedException", 400, Verdict{Decision: DontRetry}},
		{"ValidationException", 400, Verdict{Decision: DontRetry}},
		{"NoSuchKey", 404, Verdict{Decision: DontRetry}},
		{"AccessDenied", 403, Verdict{Decision: DontRetry}},
		{"InternalServerError", 500, Verdict{}},
		{"ServiceUnavailable", 503, Verdict{}},
	}
	req := get(t, "http://aws.test/")
	for _, c := range codes {
		for _, form := range awsWireForms {
			t.Run(c.code+"/"+form.name, func(t *testing.T) {
				body := fmt.Sprintf(form.body, c.code)
				resp, _ := awsBodyResponse(c.status, form.contentType, body)
				assert.Equal(t, c.want, AWSErrorClassifier().Classify(req, resp, nil))
				got, err := io.ReadAll(resp.Body)
				require.NoError(t, err)
				assert.Equal(t, body, string(got))
			})
		}
	}
}

// TestAWSErrorClassifierStalledBody checks that a body that stalls holds
// the decision up 100 ms at most, then has no opinion, and that the caller
// still gets every byte.
func TestAWSErrorClassifierStalledBody(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		body := newPausingBody(`{"message":"Rate exceeded","__ty`, `pe":"ThrottlingException"}`)
		resp := &http.Response{StatusCode: 400, Header: http.Header{"Content-Type": {"application/x-amz-json-1.0"}}, Body: body, ContentLength: -1}
		start := time.Now()
		v := AWSErrorClassifier().Classify(get(t, "http://aws.test/"), resp, nil)
		assert.Equal(t, 100*time.Millisecond, time.Since(start))
		assert.Equal(t, Verdict{}, v, "no code read in time: no opinion")
		close(body.release)
		got, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		assert.Equal(t, `{"message":"Rate exceeded","__type":"ThrottlingException"}`, string(got))
		resp.Body.Close()
	})
}

// TestAWSBodyCodeInTransport checks the Transport over DynamoDB's answers,
// whose codes are only in their bodies: a throttled read declared
// resendable is retried after the throttle backoff; a final error reaches
// the caller intact, its body unread by anyone else and closed by no one.
func TestAWSBodyCodeInTransport(t *testing.T) {
	const (
		throttle    = `{"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException","message":"The level of configured provisioned throughput for the table was exceeded. Consider increasing your provisioning level with the UpdateTable API."}`
		conditional = `{"__type":"com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException","message":"The conditional request failed"}`
	)
	dynamo := http.Header{"Content-Type": {"application/x-amz-json-1.0"}}
	tests := []struct {
		name     string
		first    step
		attempts int
		delay    time.Duration
		body     string // the body the caller gets
	}{
		{"throttled", step{status: 400, header: dynamo, body: throttle}, 2, 500 * time.Millisecond, "ok"},
		{"final", step{status: 400, header: dynamo, body: conditional}, 1, 0, conditional},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				base := &script{steps: []step{tt.first, {status: 200, body: "ok"}}}
				tr := newTestTransport(base, 0.5,
					WithClassifier(Chain{AWSErrorClassifier(), DefaultClassifier()}),
					WithResendable(func(*http.Request) bool { return true }))
				req, _ := withBody(t, t.Context(), http.MethodPost, "http://dynamodb.test/", `{"TableName":"orders"}`, true)
				start := time.Now()
				resp, err := tr.RoundTrip(req)
				require.NoError(t, err)
				assert.Equal(t, tt.attempts, base.count())
				if tt.attempts > 1 {
					assert.Equal(t, tt.delay, base.times[1].Sub(start))
				}
				base.requireDiscardedClosed(t, resp)
				got, err := io.ReadAll(resp.Body)
				require.NoError(t, err)
				assert.Equal(t, tt.body, string(got))
				resp.Body.Close()
				assert.EqualValues(t, 1, base.responses[len(base.responses)-1].closes.Load())
			})
		})
	}
}

// TestAWSErrorClassifierReadsNoSuccess checks that a success, and an error
// whose code is in a header, are judged without reading or wrapping the
// body, and without allocating.
func TestAWSErrorClassifierReadsNoSuccess(t *testing.T) {
	req := get(t, "http://dynamodb.test/")
	ok, _ := awsBodyResponse(200, "application/x-amz-json-1.0", `{"Item":{}}`)
	inHeader, _ := awsBodyResponse(400, "application/x-amz-json-1.0", `{"__type":"ThrottlingException"}`)
	inHeader.Header.Set("X-Amzn-Errortype", "ThrottlingException")
	c := AWSErrorClassifier()
	allocs := testing.AllocsPerRun(100, func() {
		c.Classify(req, ok, nil)
		c.Classify(req, inHeader, nil)
	})
	assert.Zero(t, allocs)
	for _, resp := range []*http.Response{ok, inHeader} {
		_, peeked := resp.Body.(*peekedBody)
		assert.False(t, peeked)
	}
}

func BenchmarkAWSErrorClassifier(b *testing.B) {
	req, _ := http.NewRequest(http.MethodPost, "http://dynamodb.test/", nil)
	const doc = `{"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException","message":"The level of configured provisioned throughput for the table was exceeded."}`
	c := AWSErrorClassifier()
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
		r := get(t, "http://s3.test/photos/cat-copy.jpg?x-id=CopyObject")
		r.Method = http.MethodPut
		r.Header.Set("X-Amz-Copy-Source", "photos/cat.jpg")
		return r
	}
	method := func(m, url string) func() *http.Request {
		return func() *http.Request {
			r := get(t, url)
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
		want        Verdict
		read        bool // whether the body is peeked at
	}{
		{"CopyObject InternalError", copyObject, "application/xml", s3ErrorDoc("InternalError"), Verdict{Decision: Retry}, true},
		{"CopyObject SlowDown", copyObject, "application/xml", s3ErrorDoc("SlowDown"), Verdict{Decision: Retry, Throttle: true}, true},
		{"CopyObject after keep-alive whitespace", copyObject, "application/xml", "\n \n \n" + s3ErrorDoc("InternalError"), Verdict{Decision: Retry}, true},
		{"CopyObject AccessDenied, as a 500", copyObject, "application/xml", s3ErrorDoc("AccessDenied"), Verdict{Decision: Retry}, true},
		{"CopyObject without a Content-Type", copyObject, "", s3ErrorDoc("InternalError"), Verdict{Decision: Retry}, true},
		{"CopyObject result", copyObject, "application/xml", s3CopyResult, Verdict{}, true},
		{"CopyObject cut before the root", copyObject, "application/xml", "\n \n", Verdict{}, true},
		{"CopyObject, Error not the root", copyObject, "application/xml", "<CopyObjectResult><Error><Code>InternalError</Code></Error></CopyObjectResult>", Verdict{}, true},
		{"CopyObject, not XML", copyObject, "text/plain", s3ErrorDoc("InternalError"), Verdict{}, false},
		{"UploadPartCopy InternalError", uploadPartCopy, "application/xml", s3ErrorDoc("InternalError"), Verdict{Decision: Retry}, true},
		{"CompleteMultipartUpload InternalError", complete, "application/xml", s3ErrorDoc("InternalError"), Verdict{Decision: Retry}, true},
		{"GetObject of an XML object", method(http.MethodGet, "http://s3.test/photos/error.xml?x-id=GetObject"), "application/xml", s3ErrorDoc("InternalError"), Verdict{}, false},
		{"PutObject", method(http.MethodPut, "http://s3.test/photos/cat.jpg?x-id=PutObject"), "application/xml", s3ErrorDoc("InternalError"), Verdict{}, false},
		{"CreateMultipartUpload", method(http.MethodPost, "http://s3.test/photos/big.bin?uploads&x-id=CreateMultipartUpload"), "application/xml", s3ErrorDoc("InternalError"), Verdict{}, false},
		{"a POST with uploadIds", method(http.MethodPost, "http://s3.test/?uploadIds=1"), "application/xml", s3ErrorDoc("InternalError"), Verdict{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, _ := awsBodyResponse(http.StatusOK, tt.contentType, tt.body)
			assert.Equal(t, tt.want, AWSErrorClassifier().Classify(tt.req(), resp, nil))
			_, peeked := resp.Body.(*peekedBody)
			assert.Equal(t, tt.read, peeked, "the body was peeked at")
			got, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			assert.Equal(t, tt.body, string(got), "the caller gets the body byte for byte")
		})
	}
}

// TestS3ErrorIn200InTransport checks the Transport over a CopyObject that
// S3 answers 200 OK with an InternalError: it is retried as a 500 is, and
// the result of the retry reaches the caller at once, byte for byte.
func TestS3ErrorIn200InTransport(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		xmlHeader := http.Header{"Content-Type": {"application/xml"}}
		base := &script{steps: []step{
			{status: 200, header: xmlHeader, body: s3ErrorDoc("InternalError")},
			{status: 200, header: xmlHeader, body: s3CopyResult},
		}}
		tr := newTestTransport(base, 0.5, WithClassifier(Chain{AWSErrorClassifier(), DefaultClassifier()}))
		req, _ := withBody(t, t.Context(), http.MethodPut, "http://s3.test/photos/cat-copy.jpg?x-id=CopyObject", "", true)
		req.Header.Set("X-Amz-Copy-Source", "photos/cat.jpg")
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		require.Equal(t, 2, base.count())
		assert.Equal(t, base.times[1], time.Now(), "the result was judged at once")
		base.requireDiscardedClosed(t, resp)
		got, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		assert.Equal(t, s3CopyResult, string(got))
		resp.Body.Close()
	})
}
