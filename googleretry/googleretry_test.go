package googleretry

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"unicode/utf8"

	"github.com/retryhttp/retryhttp/classify"
	"github.com/retryhttp/retryhttp/internal/testkit"
	"github.com/retryhttp/retryhttp/internal/wire"
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
	throttle := classify.Verdict{Decision: classify.Retry, Throttle: true}
	tests := []struct {
		name string
		resp *http.Response
		want classify.Verdict
	}{
		{"rate limit", googleResponse(403, jsonType, googleError(403, "usageLimits", "rateLimitExceeded", "Rate Limit Exceeded")), throttle},
		{"user rate limit", googleResponse(403, jsonType, googleError(403, "usageLimits", "userRateLimitExceeded", "User Rate Limit Exceeded")), throttle},
		{"ErrorInfo rate limit", googleResponse(403, jsonType, googleErrorInfo), throttle},
		{"backend error", googleResponse(403, jsonType, googleError(403, "global", "backendError", "Backend Error")), classify.Verdict{Decision: classify.Retry}},
		{"internal error", googleResponse(403, jsonType, googleError(403, "global", "internalError", "Internal Error")), classify.Verdict{Decision: classify.Retry}},
		{"missing permission", googleResponse(403, jsonType, googleError(403, "global", "insufficientPermissions", "Insufficient Permission")), classify.Verdict{}},
		{"daily limit", googleResponse(403, jsonType, googleError(403, "usageLimits", "dailyLimitExceeded", "Daily Limit Exceeded")), classify.Verdict{}},
		{"quota", googleResponse(403, jsonType, googleError(403, "usageLimits", "quotaExceeded", "Quota Exceeded")), classify.Verdict{}},
		{"not JSON", googleResponse(403, "text/html; charset=UTF-8", "<html>rateLimitExceeded</html>"), classify.Verdict{}},
		{"malformed", googleResponse(403, jsonType, `{"error":{"errors":[{"reason":"rateLimitExceeded"`), classify.Verdict{}},
		{"too long to read whole", googleResponse(403, jsonType,
			`{"error":{"errors":[{"reason":"rateLimitExceeded"}],"message":"`+strings.Repeat("x", wire.PeekLimit)+`"}}`), classify.Verdict{}},
		{"429 left to its status", googleResponse(429, jsonType, googleError(429, "usageLimits", "rateLimitExceeded", "Rate Limit Exceeded")), classify.Verdict{}},
		{"500 left to its status", googleResponse(500, jsonType, googleError(500, "global", "backendError", "Backend Error")), classify.Verdict{}},
		{"success", googleResponse(200, jsonType, googleError(403, "usageLimits", "rateLimitExceeded", "x")), classify.Verdict{}},
	}
	req := testkit.Get(t, "https://www.googleapis.com/drive/v3/files")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			all, _ := io.ReadAll(tt.resp.Body)
			tt.resp.Body = io.NopCloser(strings.NewReader(string(all)))
			assert.Equal(t, tt.want, Classifier().Classify(req, tt.resp, nil))
			got, err := io.ReadAll(tt.resp.Body)
			require.NoError(t, err)
			assert.Equal(t, string(all), string(got), "the caller gets the body byte for byte")
		})
	}
	t.Run("error", func(t *testing.T) {
		assert.Equal(t, classify.Verdict{}, Classifier().Classify(req, nil, context.DeadlineExceeded))
	})
	t.Run("caller gave up", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		resp := googleResponse(403, jsonType, googleError(403, "usageLimits", "rateLimitExceeded", "x"))
		assert.Equal(t, classify.Verdict{}, Classifier().Classify(req.WithContext(ctx), resp, nil))
	})
}

// googleErrorReasonTests is shared by TestGoogleErrorReason and the seed
// corpus of FuzzGoogleErrorReason.
var googleErrorReasonTests = []struct {
	name, doc, want string
}{
	{"errors", googleError(403, "usageLimits", "rateLimitExceeded", "Rate Limit Exceeded"), "rateLimitExceeded"},
	{"ErrorInfo", googleErrorInfo, "RATE_LIMIT_EXCEEDED"},
	{"the first reason", `{"error":{"errors":[{"reason":""},{"reason":"a"},{"reason":"b"}]}}`, "a"},
	{"errors before details", `{"error":{"details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"d"}],"errors":[{"reason":"e"}]}}`, "e"},
	{"a detail of another type", `{"error":{"details":[{"@type":"type.googleapis.com/google.rpc.Help","reason":"h"}]}}`, ""},
	{"a reason outside error", `{"errors":[{"reason":"rateLimitExceeded"}]}`, ""},
	{"a reason that is not a string", `{"error":{"errors":[{"reason":403}]}}`, ""},
	{"errors that are not an array", `{"error":{"errors":{"reason":"x"}}}`, ""},
	{"keys in another case", `{"Error":{"Errors":[{"Reason":"x"}]}}`, "x"},
	{"escapes", `{"error":{"errors":[{"reason":"rate\u004cimitExceeded"}]}}`, "rateLimitExceeded"},
	{"invalid UTF-8", "{\"error\":{\"errors\":[{\"reason\":\"\xff\"}]}}", "\ufffd"},
	{"cut short", `{"error":{"errors":[{"reason":"rateLimitExceeded"`, ""},
	{"two documents", `{"error":{"errors":[{"reason":"a"}]}}{}`, ""},
	{"empty", ``, ""},
	{"null", `null`, ""},
	{"an array", `[{"error":{"errors":[{"reason":"a"}]}}]`, ""},
	{"a number past float64", `{"error":{"code":1e400,"errors":[{"reason":"a"}]}}`, "a"},
	{"an integer past int64", `{"error":{"code":99999999999999999999,"errors":[{"reason":"a"}]}}`, "a"},
	{"nested past the decoder's depth", `{"error":{"x":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `,"errors":[{"reason":"a"}]}}`, ""},
	{"a thousand errors", `{"error":{"errors":[` + strings.Repeat(`{"reason":""},`, 1000) + `{"reason":"last"}]}}`, "last"},
}

func TestGoogleErrorReason(t *testing.T) {
	for _, tt := range googleErrorReasonTests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, googleErrorReason([]byte(tt.doc)))
		})
	}
}

// FuzzGoogleErrorReason checks that googleErrorReason reads a reason only
// from valid JSON, gives valid UTF-8 no longer than JSON's escapes allow,
// and finds any reason written by encoding/json in an error or an
// ErrorInfo detail; and that Classifier follows the reason
// of any document, which the caller still gets byte for byte.
func FuzzGoogleErrorReason(f *testing.F) {
	for _, tt := range googleErrorReasonTests {
		f.Add([]byte(tt.doc), tt.want)
	}
	f.Fuzz(func(t *testing.T, doc []byte, reason string) {
		got := googleErrorReason(doc)
		if got != "" && !json.Valid(doc) {
			t.Fatalf("googleErrorReason(%q) = %q, from a document that is not JSON", doc, got)
		}
		if !utf8.ValidString(got) || len(got) > 3*len(doc) {
			t.Fatalf("googleErrorReason(%q) = %q: not valid UTF-8, or longer than the document allows", doc, got)
		}

		m, err := json.Marshal(reason)
		if err != nil {
			t.Fatal(err)
		}
		var want string
		if err := json.Unmarshal(m, &want); err != nil {
			t.Fatal(err)
		}
		for _, written := range []string{
			`{"error":{"code":403,"errors":[{"domain":"usageLimits","reason":` + string(m) + `}]}}`,
			`{"error":{"details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":` + string(m) + `}]}}`,
		} {
			if got := googleErrorReason([]byte(written)); got != want {
				t.Fatalf("googleErrorReason(%q) = %q, want %q", written, got, want)
			}
		}

		wantVerdict := classify.Verdict{}
		if len(doc) <= wire.PeekLimit {
			switch got {
			case "rateLimitExceeded", "userRateLimitExceeded", "RATE_LIMIT_EXCEEDED":
				wantVerdict = classify.Verdict{Decision: classify.Retry, Throttle: true}
			case "backendError", "internalError":
				wantVerdict = classify.Verdict{Decision: classify.Retry}
			}
		}
		// In a synctest bubble, the peek's 100 ms wait ends only once the
		// read ahead is blocked, however busy the machine.
		synctest.Test(t, func(t *testing.T) {
			resp := googleResponse(403, "application/json; charset=UTF-8", string(doc))
			v := Classifier().Classify(testkit.Get(t, "https://www.googleapis.com/"), resp, nil)
			if v != wantVerdict {
				t.Fatalf("GoogleAPIErrorClassifier on %q: got %+v, want %+v", doc, v, wantVerdict)
			}
			if body, err := io.ReadAll(resp.Body); err != nil || !bytes.Equal(body, doc) {
				t.Fatalf("the caller got %q (%v), want %q", body, err, doc)
			}
		})
	})
}
