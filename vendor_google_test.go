package retryhttp

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// googleError returns a Google API error document, in the form Google's
// API documentation shows, with one error of the given domain and reason.
func googleError(code int, domain, reason, message string) string {
	return `{
 "error": {
  "errors": [
   {
    "domain": "` + domain + `",
    "reason": "` + reason + `",
    "message": "` + message + `"
   }
  ],
  "code": ` + strconv.Itoa(code) + `,
  "message": "` + message + `"
 }
}
`
}

// googleErrorInfo is the newer form, with an ErrorInfo detail.
const googleErrorInfo = `{
  "error": {
    "code": 403,
    "message": "Quota exceeded for quota metric 'Queries' and limit 'Queries per minute' of service 'example.googleapis.com'.",
    "status": "PERMISSION_DENIED",
    "details": [
      {
        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
        "reason": "RATE_LIMIT_EXCEEDED",
        "domain": "googleapis.com",
        "metadata": {"service": "example.googleapis.com", "quota_metric": "example.googleapis.com/queries"}
      }
    ]
  }
}
`

func googleResponse(status int, contentType, body string) *http.Response {
	h := http.Header{"Vary": {"Origin", "X-Origin", "Referer"}}
	if contentType != "" {
		h.Set("Content-Type", contentType)
	}
	return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body))}
}

func TestGoogleAPIErrorClassifier(t *testing.T) {
	const jsonType = "application/json; charset=UTF-8"
	throttle := Verdict{Decision: Retry, Throttle: true}
	tests := []struct {
		name string
		resp *http.Response
		want Verdict
	}{
		{"rate limit", googleResponse(403, jsonType, googleError(403, "usageLimits", "rateLimitExceeded", "Rate Limit Exceeded")), throttle},
		{"user rate limit", googleResponse(403, jsonType, googleError(403, "usageLimits", "userRateLimitExceeded", "User Rate Limit Exceeded")), throttle},
		{"ErrorInfo rate limit", googleResponse(403, jsonType, googleErrorInfo), throttle},
		{"backend error", googleResponse(403, jsonType, googleError(403, "global", "backendError", "Backend Error")), Verdict{Decision: Retry}},
		{"internal error", googleResponse(403, jsonType, googleError(403, "global", "internalError", "Internal Error")), Verdict{Decision: Retry}},
		{"missing permission", googleResponse(403, jsonType, googleError(403, "global", "insufficientPermissions", "Insufficient Permission")), Verdict{}},
		{"daily limit", googleResponse(403, jsonType, googleError(403, "usageLimits", "dailyLimitExceeded", "Daily Limit Exceeded")), Verdict{}},
		{"quota", googleResponse(403, jsonType, googleError(403, "usageLimits", "quotaExceeded", "Quota Exceeded")), Verdict{}},
		{"not JSON", googleResponse(403, "text/html; charset=UTF-8", "<html>rateLimitExceeded</html>"), Verdict{}},
		{"malformed", googleResponse(403, jsonType, `{"error":{"errors":[{"reason":"rateLimitExceeded"`), Verdict{}},
		{"too long to read whole", googleResponse(403, jsonType,
			`{"error":{"errors":[{"reason":"rateLimitExceeded"}],"message":"`+strings.Repeat("x", PeekLimit)+`"}}`), Verdict{}},
		{"429 left to its status", googleResponse(429, jsonType, googleError(429, "usageLimits", "rateLimitExceeded", "Rate Limit Exceeded")), Verdict{}},
		{"500 left to its status", googleResponse(500, jsonType, googleError(500, "global", "backendError", "Backend Error")), Verdict{}},
		{"success", googleResponse(200, jsonType, googleError(403, "usageLimits", "rateLimitExceeded", "x")), Verdict{}},
	}
	req := get(t, "https://www.googleapis.com/drive/v3/files")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			all, _ := io.ReadAll(tt.resp.Body)
			tt.resp.Body = io.NopCloser(strings.NewReader(string(all)))
			assert.Equal(t, tt.want, GoogleAPIErrorClassifier().Classify(req, tt.resp, nil))
			got, err := io.ReadAll(tt.resp.Body)
			require.NoError(t, err)
			assert.Equal(t, string(all), string(got), "the caller gets the body byte for byte")
		})
	}
	t.Run("error", func(t *testing.T) {
		assert.Equal(t, Verdict{}, GoogleAPIErrorClassifier().Classify(req, nil, context.DeadlineExceeded))
	})
	t.Run("caller gave up", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		resp := googleResponse(403, jsonType, googleError(403, "usageLimits", "rateLimitExceeded", "x"))
		assert.Equal(t, Verdict{}, GoogleAPIErrorClassifier().Classify(req.WithContext(ctx), resp, nil))
	})
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
				opts = append(opts, WithClassifier(Chain{GoogleAPIErrorClassifier(), DefaultClassifier()}))
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
