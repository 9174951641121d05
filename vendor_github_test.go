package retryhttp

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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
