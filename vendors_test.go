package retryhttp

import (
	"io"
	"net/http"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/retryhttp/retryhttp/awsretry"
	"github.com/retryhttp/retryhttp/classify"
	"github.com/retryhttp/retryhttp/githubretry"
	"github.com/retryhttp/retryhttp/googleretry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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
					opts = append(opts, WithClassifier(classify.First(awsretry.Classifier(), classify.Default())))
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
		tr := newTestTransport(base, 0.5, WithClassifier(classify.First(awsretry.Classifier(), classify.Default())))
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
					WithClassifier(classify.First(awsretry.Classifier(), classify.Default())),
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
		tr := newTestTransport(base, 0.5, WithClassifier(classify.First(awsretry.Classifier(), classify.Default())))
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

// TestGitHubRateLimitInTransport checks the classifier in front of the
// default chain: rate-limited GETs are retried after the wait GitHub asked
// for, a wait past the Retry-After limit returns the 403 at once, and a
// 403 that is no rate limit is final.
func TestGitHubRateLimitInTransport(t *testing.T) {
	tests := []struct {
		name     string
		first    func(now time.Time) http.Header // the first answer's header, a 403
		skew     time.Duration                   // the client's clock against the server's
		attempts int
		wait     time.Duration
	}{
		{"secondary", func(time.Time) http.Header { return http.Header{"Retry-After": {"5"}} }, 0, 2, 5 * time.Second},
		{"primary", func(now time.Time) http.Header {
			return http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {strconv.FormatInt(now.Unix()+30, 10)}}
		}, 0, 2, 30 * time.Second},
		{"primary, an hour away", func(now time.Time) http.Header {
			return http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {strconv.FormatInt(now.Unix()+3600, 10)}}
		}, 0, 1, 0},
		{"secondary, two minutes", func(time.Time) http.Header { return http.Header{"Retry-After": {"120"}} }, 0, 1, 0},
		{"forbidden", func(time.Time) http.Header { return http.Header{"X-Ratelimit-Remaining": {"4999"}} }, 0, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now() // a whole second in the bubble, as Date is
				base := &script{steps: []step{{status: 403, header: tt.first(start)}, {status: 200}}}
				gh := githubretry.Classifier()
				tr := newTestTransport(base, 0, WithClassifier(classify.First(gh, classify.Default())))
				resp, err := tr.RoundTrip(get(t, "http://api.github.test/repos/o/r"))
				require.NoError(t, err)
				require.Equal(t, tt.attempts, base.count())
				base.requireDiscardedClosed(t, resp)
				resp.Body.Close()
				if tt.attempts == 1 {
					assert.Equal(t, 403, resp.StatusCode)
					assert.Zero(t, time.Since(start), "no wait before returning the 403")
					return
				}
				assert.Equal(t, 200, resp.StatusCode)
				assert.Equal(t, tt.wait, base.times[1].Sub(start))
			})
		})
	}
}

// TestGoogleAPIErrorClassifierInTransport checks a rate-limited GET: retried
// after the throttle backoff (500 ms at jitter 0.5), where the default
// chain alone returns the 403 at once.
func TestGoogleAPIErrorClassifierInTransport(t *testing.T) {
	limited := step{status: 403, header: http.Header{"Content-Type": {"application/json; charset=UTF-8"}},
		body: googleError(403, "usageLimits", "userRateLimitExceeded", "User Rate Limit Exceeded")}
	for _, classifier := range []bool{true, false} {
		synctest.Test(t, func(t *testing.T) {
			base := &script{steps: []step{limited, {status: 200, body: "{}"}}}
			var opts []Option
			if classifier {
				opts = append(opts, WithClassifier(classify.First(googleretry.Classifier(), classify.Default())))
			}
			start := time.Now()
			resp, err := newTestTransport(base, 0.5, opts...).RoundTrip(get(t, "https://sheets.googleapis.com/v4/spreadsheets/x"))
			require.NoError(t, err)
			base.requireDiscardedClosed(t, resp)
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if !classifier {
				assert.Equal(t, 1, base.count())
				assert.Equal(t, limited.body, string(got))
				return
			}
			assert.Equal(t, 2, base.count())
			assert.Equal(t, 500*time.Millisecond, base.times[1].Sub(start))
			assert.Equal(t, 200, resp.StatusCode)
		})
	}
}

// TestAWSCBORThrottleInTransport checks the Transport over CloudWatch's
// throttling answer in Smithy RPC v2 CBOR: it is retried after the throttle
// backoff, and when retries are spent, the SDK gets the body byte for byte.
func TestAWSCBORThrottleInTransport(t *testing.T) {
	cloudWatch := http.Header{"Smithy-Protocol": {"rpc-v2-cbor"}, "Content-Type": {"application/cbor"},
		"X-Amzn-Requestid": {"9b3d4bdf-4c6b-4b8f-9a5e-0c1e2f3a4b5c"}}
	throttled := step{status: 400, header: cloudWatch, body: string(cloudWatchThrottle)}
	tests := []struct {
		name     string
		steps    []step
		attempts int
		body     string // the body the caller gets
	}{
		{"retried", []step{throttled, {status: 200, body: "ok"}}, 2, "ok"},
		{"retries spent", []step{throttled, throttled}, 2, string(cloudWatchThrottle)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				base := &script{steps: tt.steps}
				tr := newTestTransport(base, 0.5, WithMaxAttempts(2),
					WithClassifier(classify.First(awsretry.Classifier(), classify.Default())),
					WithResendable(func(*http.Request) bool { return true }))
				req, _ := withBody(t, t.Context(), http.MethodPost,
					"http://monitoring.test/service/GraniteServiceVersion20100801/operation/GetMetricData", "\xa0", true)
				start := time.Now()
				resp, err := tr.RoundTrip(req)
				require.NoError(t, err)
				require.Equal(t, tt.attempts, base.count())
				assert.Equal(t, 500*time.Millisecond, base.times[1].Sub(start), "the throttle backoff")
				got, err := io.ReadAll(resp.Body)
				require.NoError(t, err)
				assert.Equal(t, tt.body, string(got))
				resp.Body.Close()
			})
		})
	}
}

// cloudWatchThrottle is CloudWatch's throttling error in Smithy RPC v2 CBOR:
// {"__type": "com.amazonaws.cloudwatch#Throttling", "message": "Rate exceeded"}.
var cloudWatchThrottle = []byte("\xa2f__typex#com.amazonaws.cloudwatch#ThrottlinggmessagemRate exceeded")

// s3CopyResult is the body of a successful CopyObject.
const s3CopyResult = `<?xml version="1.0" encoding="UTF-8"?>
<CopyObjectResult><LastModified>2026-11-25T06:40:00.000Z</LastModified><ETag>"9b2cf535f27731c974343645a3985328"</ETag></CopyObjectResult>`

// s3ErrorDoc is the body of an S3 error with code.
func s3ErrorDoc(code string) string {
	return `<?xml version="1.0" encoding="UTF-8"?>` + "\n" +
		`<Error><Code>` + code + `</Code><Message>We encountered an internal error. Please try again.</Message>` +
		`<RequestId>656c76696e6727732072657175657374</RequestId><HostId>Uuag1LuByRx9e6j5Onimru9pO4ZVKnJ2Qz7/C1NPcfTWAtRPfTaOFg==</HostId></Error>`
}

// googleError is a Google API error document, in its older form.
func googleError(code int, domain, reason, message string) string {
	return `{"error": {"errors": [{"domain": "` + domain + `", "reason": "` + reason + `", "message": "` + message + `"}],` +
		` "code": ` + strconv.Itoa(code) + `, "message": "` + message + `"}}`
}
