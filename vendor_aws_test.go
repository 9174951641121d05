package retryhttp

import (
	"context"
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
