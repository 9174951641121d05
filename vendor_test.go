package retryhttp

import (
	"context"
	"net/http"
	"strconv"
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

// githubAt returns the GitHub classifier with its clock fixed at now.
func githubAt(now time.Time) Classifier {
	return githubRateLimitClassifier{now: func() time.Time { return now }}
}

func TestGitHubRateLimitClassifier(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	epoch := func(d time.Duration) string { return strconv.FormatInt(now.Add(d).Unix(), 10) }
	date := func(d time.Duration) string { return now.Add(d).Format(http.TimeFormat) }
	throttle := func(d time.Duration) Verdict { return Verdict{Decision: Retry, Throttle: true, RetryAfter: d} }
	tests := []struct {
		name   string
		status int
		header http.Header
		want   Verdict
	}{
		{"secondary, Retry-After seconds", 403, http.Header{"Retry-After": {"60"}}, throttle(time.Minute)},
		{"secondary, Retry-After date against Date", 403,
			// The server's clock is an hour ahead of the client's.
			http.Header{"Retry-After": {date(time.Hour + 30*time.Second)}, "Date": {date(time.Hour)}}, throttle(30 * time.Second)},
		{"secondary, Retry-After date without Date", 403, http.Header{"Retry-After": {date(30 * time.Second)}}, throttle(30 * time.Second)},
		{"secondary, Retry-After 0", 403, http.Header{"Retry-After": {"0"}}, throttle(0)},
		{"secondary, unreadable Retry-After", 403, http.Header{"Retry-After": {"soon"}}, throttle(0)},
		{"secondary, Retry-After values differ", 403, http.Header{"Retry-After": {"1", "60"}}, throttle(0)},
		{"secondary, Retry-After values repeat", 403, http.Header{"Retry-After": {"7", " 7"}}, throttle(7 * time.Second)},
		{"Retry-After wins over reset", 403,
			http.Header{"Retry-After": {"5"}, "X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {epoch(time.Hour)}}, throttle(5 * time.Second)},
		{"primary", 403, http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {epoch(42 * time.Second)}}, throttle(42 * time.Second)},
		{"primary, against Date", 403,
			http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {epoch(time.Hour + 10*time.Second)}, "Date": {date(time.Hour)}},
			throttle(10 * time.Second)},
		{"primary, invalid Date", 403,
			http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {epoch(10 * time.Second)}, "Date": {"yesterday"}},
			throttle(10 * time.Second)},
		{"primary, two Dates", 403,
			http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {epoch(10 * time.Second)}, "Date": {date(time.Hour), date(time.Hour)}},
			throttle(10 * time.Second)},
		{"primary, reset passed", 403, http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {epoch(-time.Minute)}}, throttle(0)},
		{"primary, an hour away", 403, http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {epoch(time.Hour)}}, throttle(time.Hour)},
		{"primary, reset too large", 403, http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {"99999999999999999999999"}}, throttle(1<<63 - 1)},
		{"primary on a 429", 429, http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {epoch(3 * time.Second)}}, throttle(3 * time.Second)},
		{"remaining, no reset", 403, http.Header{"X-Ratelimit-Remaining": {"0"}}, Verdict{}},
		{"reset, requests remaining", 403, http.Header{"X-Ratelimit-Remaining": {"12"}, "X-Ratelimit-Reset": {epoch(time.Minute)}}, Verdict{}},
		{"reset not a number", 403, http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {"+60"}}, Verdict{}},
		{"reset negative", 403, http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {"-60"}}, Verdict{}},
		{"reset empty", 403, http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {""}}, Verdict{}},
		{"plain 403", 403, http.Header{}, Verdict{}},
		{"plain 429", 429, http.Header{}, Verdict{}},
		{"404 with Retry-After", 404, http.Header{"Retry-After": {"5"}}, Verdict{}},
		{"503 with Retry-After", 503, http.Header{"Retry-After": {"5"}}, Verdict{}},
		{"200 with remaining 0", 200, http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {epoch(time.Minute)}}, Verdict{}},
	}
	req := get(t, "http://api.github.test/repos/o/r")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := &http.Response{StatusCode: tt.status, Header: tt.header, Body: http.NoBody}
			assert.Equal(t, tt.want, githubAt(now).Classify(req, resp, nil))
		})
	}
	t.Run("error", func(t *testing.T) {
		assert.Equal(t, Verdict{}, githubAt(now).Classify(req, nil, context.DeadlineExceeded))
	})
	t.Run("caller gave up", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		resp := &http.Response{StatusCode: 403, Header: http.Header{"Retry-After": {"1"}}, Body: http.NoBody}
		assert.Equal(t, Verdict{}, githubAt(now).Classify(req.WithContext(ctx), resp, nil))
	})
}

func FuzzGitHubRateLimitWait(f *testing.F) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	f.Add("60", "", "", "")
	f.Add("Mon, 23 Nov 2026 12:00:30 GMT", "", "", "Mon, 23 Nov 2026 12:00:00 GMT")
	f.Add("", "0", strconv.FormatInt(now.Unix()+42, 10), "")
	f.Add("", "0", "99999999999999999999999", "Mon, 23 Nov 2026 13:00:00 GMT")
	f.Add("", "0", "1099511627777", "")
	f.Add("", "0", "-1", "")
	f.Add("soon", "1", "1", "yesterday")
	f.Fuzz(func(t *testing.T, retryAfter, remaining, reset, date string) {
		h := headerOf(map[string]string{"Retry-After": retryAfter, "X-Ratelimit-Remaining": remaining, "X-Ratelimit-Reset": reset, "Date": date})
		wait, limited := githubRateLimitWait(h, now)
		if wait < 0 {
			t.Fatalf("negative wait %v", wait)
		}
		if !limited && wait != 0 {
			t.Fatalf("wait %v without a rate limit", wait)
		}
		if retryAfter != "" && !limited {
			t.Fatal("a Retry-After should mark a rate limit")
		}
		v := githubAt(now).Classify(get(t, "http://api.github.test/"), &http.Response{StatusCode: 403, Header: h, Body: http.NoBody}, nil)
		if v.Decision == Retry != limited || v.RetryAfter != wait || v.Throttle != limited {
			t.Fatalf("verdict %+v for wait %v, limited %t", v, wait, limited)
		}
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
		{"primary, client clock an hour behind", func(now time.Time) http.Header {
			return http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {strconv.FormatInt(now.Unix()+30, 10)},
				"Date": {now.UTC().Format(http.TimeFormat)}}
		}, -time.Hour, 2, 30 * time.Second},
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
				gh := githubRateLimitClassifier{now: func() time.Time { return time.Now().Add(tt.skew) }}
				tr := newTestTransport(base, 0, WithClassifier(Chain{gh, DefaultClassifier()}))
				tr.now = gh.now
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
