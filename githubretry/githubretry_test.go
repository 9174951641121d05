package githubretry

import (
	"context"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/retryhttp/retryhttp/classify"
	"github.com/retryhttp/retryhttp/internal/testkit"
	"github.com/retryhttp/retryhttp/internal/wire"
	"github.com/stretchr/testify/assert"
)

// githubAt returns the GitHub classifier with its clock fixed at now.
func githubAt(now time.Time) classify.Classifier {
	return githubRateLimitClassifier{now: func() time.Time { return now }}
}

// githubNow is the client's clock in the GitHub tests: Monday, 23 November
// 2026, 12:00:00 UTC.
var githubNow = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

// githubEpoch is the Unix epoch d from githubNow, as x-ratelimit-reset.
func githubEpoch(d time.Duration) string { return strconv.FormatInt(githubNow.Add(d).Unix(), 10) }

// githubDate is the HTTP-date d from githubNow.
func githubDate(d time.Duration) string { return githubNow.Add(d).Format(http.TimeFormat) }

// githubThrottle is the verdict on a rate limit with a wait of d.
func githubThrottle(d time.Duration) classify.Verdict {
	return classify.Verdict{Decision: classify.Retry, Throttle: true, RetryAfter: d}
}

// githubRateLimitTests is shared by TestGitHubRateLimitClassifier and the
// seed corpus of FuzzGitHubRateLimitWait.
var githubRateLimitTests = []struct {
	name   string
	status int
	header http.Header
	want   classify.Verdict
}{
	{"secondary, Retry-After seconds", 403, http.Header{"Retry-After": {"60"}}, githubThrottle(time.Minute)},
	{"secondary, Retry-After date against Date", 403,
		// The server's clock is an hour ahead of the client's.
		http.Header{"Retry-After": {githubDate(time.Hour + 30*time.Second)}, "Date": {githubDate(time.Hour)}}, githubThrottle(30 * time.Second)},
	{"secondary, Retry-After date without Date", 403, http.Header{"Retry-After": {githubDate(30 * time.Second)}}, githubThrottle(30 * time.Second)},
	{"secondary, Retry-After 0", 403, http.Header{"Retry-After": {"0"}}, githubThrottle(0)},
	{"secondary, unreadable Retry-After", 403, http.Header{"Retry-After": {"soon"}}, githubThrottle(0)},
	{"secondary, Retry-After values differ", 403, http.Header{"Retry-After": {"1", "60"}}, githubThrottle(0)},
	{"secondary, Retry-After values repeat", 403, http.Header{"Retry-After": {"7", " 7"}}, githubThrottle(7 * time.Second)},
	{"Retry-After wins over reset", 403,
		http.Header{"Retry-After": {"5"}, "X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {githubEpoch(time.Hour)}}, githubThrottle(5 * time.Second)},
	{"primary", 403, http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {githubEpoch(42 * time.Second)}}, githubThrottle(42 * time.Second)},
	{"primary, against Date", 403,
		http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {githubEpoch(time.Hour + 10*time.Second)}, "Date": {githubDate(time.Hour)}},
		githubThrottle(10 * time.Second)},
	{"primary, invalid Date", 403,
		http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {githubEpoch(10 * time.Second)}, "Date": {"yesterday"}},
		githubThrottle(10 * time.Second)},
	{"primary, two Dates", 403,
		http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {githubEpoch(10 * time.Second)}, "Date": {githubDate(time.Hour), githubDate(time.Hour)}},
		githubThrottle(10 * time.Second)},
	{"primary, reset passed", 403, http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {githubEpoch(-time.Minute)}}, githubThrottle(0)},
	{"primary, an hour away", 403, http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {githubEpoch(time.Hour)}}, githubThrottle(time.Hour)},
	{"primary, reset too large", 403, http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {"99999999999999999999999"}}, githubThrottle(1<<63 - 1)},
	{"primary on a 429", 429, http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {githubEpoch(3 * time.Second)}}, githubThrottle(3 * time.Second)},
	{"remaining, no reset", 403, http.Header{"X-Ratelimit-Remaining": {"0"}}, classify.Verdict{}},
	{"reset, requests remaining", 403, http.Header{"X-Ratelimit-Remaining": {"12"}, "X-Ratelimit-Reset": {githubEpoch(time.Minute)}}, classify.Verdict{}},
	{"reset not a number", 403, http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {"+60"}}, classify.Verdict{}},
	{"reset negative", 403, http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {"-60"}}, classify.Verdict{}},
	{"reset empty", 403, http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {""}}, classify.Verdict{}},
	{"plain 403", 403, http.Header{}, classify.Verdict{}},
	{"plain 429", 429, http.Header{}, classify.Verdict{}},
	{"404 with Retry-After", 404, http.Header{"Retry-After": {"5"}}, classify.Verdict{}},
	{"503 with Retry-After", 503, http.Header{"Retry-After": {"5"}}, classify.Verdict{}},
	{"200 with remaining 0", 200, http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {githubEpoch(time.Minute)}}, classify.Verdict{}},

	// Hostile numbers and dates: every wait saturates, none wraps.
	{"primary, reset at the int64 maximum", 403, http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {"9223372036854775807"}}, githubThrottle(math.MaxInt64)},
	{"primary, reset past the bound", 403, http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {strconv.FormatInt(wire.MaxEpochSeconds+1, 10)}}, githubThrottle(math.MaxInt64)},
	{"primary, reset of 400 digits", 403, http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {strings.Repeat("9", 400)}}, githubThrottle(math.MaxInt64)},
	{"primary, reset the smallest int64", 403, http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {"-9223372036854775808"}}, classify.Verdict{}},
	{"primary, against a Date in year 0", 403,
		http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {githubEpoch(time.Minute)}, "Date": {"Sat, 01 Jan 0000 00:00:00 GMT"}}, githubThrottle(math.MaxInt64)},
	{"primary, against a Date in year 9999", 403,
		http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {githubEpoch(time.Minute)}, "Date": {"Fri, 31 Dec 9999 23:59:59 GMT"}}, githubThrottle(0)},
	{"primary, reset zero", 403, http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {"0"}}, githubThrottle(0)},
	{"remaining past the int64 maximum", 403, http.Header{"X-Ratelimit-Remaining": {"99999999999999999999"}, "X-Ratelimit-Reset": {githubEpoch(time.Minute)}}, classify.Verdict{}},
	{"secondary, Retry-After of 20 digits", 403, http.Header{"Retry-After": {"99999999999999999999"}}, githubThrottle(math.MaxInt64)},
	{"secondary, year 9999 against a Date in year 0", 403,
		http.Header{"Retry-After": {"Fri, 31 Dec 9999 23:59:59 GMT"}, "Date": {"Sat, 01 Jan 0000 00:00:00 GMT"}}, githubThrottle(math.MaxInt64)},
	{"secondary, year 0 against a Date in year 9999", 403,
		http.Header{"Retry-After": {"Sat, 01 Jan 0000 00:00:00 GMT"}, "Date": {"Fri, 31 Dec 9999 23:59:59 GMT"}}, githubThrottle(0)},
}

func TestGitHubRateLimitClassifier(t *testing.T) {
	req := testkit.Get(t, "http://api.github.test/repos/o/r")
	for _, tt := range githubRateLimitTests {
		t.Run(tt.name, func(t *testing.T) {
			resp := &http.Response{StatusCode: tt.status, Header: tt.header, Body: http.NoBody}
			assert.Equal(t, tt.want, githubAt(githubNow).Classify(req, resp, nil))
		})
	}
	t.Run("error", func(t *testing.T) {
		assert.Equal(t, classify.Verdict{}, githubAt(githubNow).Classify(req, nil, context.DeadlineExceeded))
	})
	t.Run("caller gave up", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		resp := &http.Response{StatusCode: 403, Header: http.Header{"Retry-After": {"1"}}, Body: http.NoBody}
		assert.Equal(t, classify.Verdict{}, githubAt(githubNow).Classify(req.WithContext(ctx), resp, nil))
	})
}

// FuzzGitHubRateLimitWait checks that GitHub's headers give a wait that is
// never negative, only for a rate limit; that a Retry-After is read as
// ParseRetryAfter reads it, against a readable Date, and two that differ
// give no wait; that a primary limit needs a remaining count of 0 and a
// reset in digits; and that the classifier's verdict carries the wait.
func FuzzGitHubRateLimitWait(f *testing.F) {
	for _, tt := range githubRateLimitTests {
		var retryAfter2 string
		if v := tt.header["Retry-After"]; len(v) > 1 {
			retryAfter2 = v[1]
		}
		f.Add(tt.header.Get("Retry-After"), retryAfter2, tt.header.Get("X-Ratelimit-Remaining"), tt.header.Get("X-Ratelimit-Reset"), tt.header.Get("Date"))
	}
	f.Fuzz(func(t *testing.T, retryAfter, retryAfter2, remaining, reset, date string) {
		h := testkit.HeaderOf(map[string]string{"Retry-After": retryAfter, "X-Ratelimit-Remaining": remaining, "X-Ratelimit-Reset": reset, "Date": date})
		if retryAfter != "" && retryAfter2 != "" {
			h["Retry-After"] = append(h["Retry-After"], retryAfter2)
		}
		wait, limited := githubRateLimitWait(h, githubNow)
		if wait < 0 {
			t.Fatalf("githubRateLimitWait(%q): negative wait %v", h, wait)
		}
		if !limited && wait != 0 {
			t.Fatalf("githubRateLimitWait(%q): wait %v without a rate limit", h, wait)
		}
		serverClock := githubNow
		if d, err := http.ParseTime(strings.Trim(date, " \t")); err == nil {
			serverClock = d
		}
		trim := func(s string) string { return strings.Trim(s, " \t") }
		switch {
		case retryAfter != "":
			want, _ := classify.ParseRetryAfter(retryAfter, serverClock)
			if retryAfter2 != "" && trim(retryAfter2) != trim(retryAfter) {
				want = 0
			}
			if !limited || wait != want {
				t.Fatalf("githubRateLimitWait(%q) = (%v, %t), want (%v, true)", h, wait, limited, want)
			}
		case trim(remaining) == "0" && testkit.IsDigits(trim(reset)):
			if !limited {
				t.Fatalf("githubRateLimitWait(%q): no rate limit", h)
			}
			if n, err := strconv.ParseInt(trim(reset), 10, 64); err == nil && n <= wire.MaxEpochSeconds {
				if want := max(time.Unix(n, 0).Sub(serverClock), 0); wait != want {
					t.Fatalf("githubRateLimitWait(%q) = %v, want %v", h, wait, want)
				}
			} else if wait != math.MaxInt64 {
				t.Fatalf("githubRateLimitWait(%q) = %v, want the largest Duration", h, wait)
			}
		case limited:
			t.Fatalf("githubRateLimitWait(%q): a rate limit without Retry-After, a remaining count of 0 or a reset", h)
		}
		v := githubAt(githubNow).Classify(testkit.Get(t, "http://api.github.test/"), &http.Response{StatusCode: 403, Header: h, Body: http.NoBody}, nil)
		if v.Decision == classify.Retry != limited || v.RetryAfter != wait || v.Throttle != limited {
			t.Fatalf("verdict %+v for wait %v, limited %t", v, wait, limited)
		}
	})
}
