package wire

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/retryhttp/retryhttp/internal/testkit"
	"github.com/stretchr/testify/assert"
)

// rateLimitNow is the time the rate limit tests read at: Saturday,
// 21 November 2026, 12:00:00 UTC.
var rateLimitNow = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// rateLimitResetTests is shared by TestRateLimitReset and the seed corpus
// of FuzzRateLimitReset.
var rateLimitResetTests = []struct {
	name   string
	header http.Header
	want   time.Duration
	ok     bool
}{
	{"none", http.Header{}, 0, false},
	{"X-RateLimit-Reset seconds", http.Header{"X-Ratelimit-Reset": {"30"}}, 30 * time.Second, true},
	{"X-RateLimit-Reset epoch", http.Header{"X-Ratelimit-Reset": {strconv.FormatInt(rateLimitNow.Unix()+45, 10)}}, 45 * time.Second, true},
	{"X-RateLimit-Reset epoch past", http.Header{"X-Ratelimit-Reset": {strconv.FormatInt(rateLimitNow.Unix()-45, 10)}}, 0, false},
	{"X-RateLimit-Reset zero", http.Header{"X-Ratelimit-Reset": {"0"}}, 0, false},
	{"X-RateLimit-Reset negative", http.Header{"X-Ratelimit-Reset": {"-5"}}, 0, false},
	{"X-RateLimit-Reset garbage", http.Header{"X-Ratelimit-Reset": {"soon"}}, 0, false},
	{"X-RateLimit-Reset decimal", http.Header{"X-Ratelimit-Reset": {"1.5"}}, 0, false},
	{"X-RateLimit-Reset huge", http.Header{"X-Ratelimit-Reset": {"999999999999999999999999"}}, 1<<63 - 1, true},
	{"RateLimit reset=", http.Header{"Ratelimit": {"limit=100, remaining=0, reset=20"}}, 20 * time.Second, true},
	{"RateLimit structured t=", http.Header{"Ratelimit": {`"default";r=0;t=7`}}, 7 * time.Second, true},
	{"RateLimit wins over X-", http.Header{"Ratelimit": {"reset=3"}, "X-Ratelimit-Reset": {"30"}}, 3 * time.Second, true},
	{"RateLimit without reset", http.Header{"Ratelimit": {"limit=100"}, "X-Ratelimit-Reset": {"30"}}, 30 * time.Second, true},
	{"RateLimit bad reset", http.Header{"Ratelimit": {"reset=-1"}}, 0, false},
	// The reset is a floor only once the quota is spent.
	{"X-RateLimit-Remaining left", http.Header{"X-Ratelimit-Reset": {"30"}, "X-Ratelimit-Remaining": {"4990"}}, 0, false},
	{"X-RateLimit-Remaining spent", http.Header{"X-Ratelimit-Reset": {"30"}, "X-Ratelimit-Remaining": {"0"}}, 30 * time.Second, true},
	{"X-RateLimit-Remaining unreadable", http.Header{"X-Ratelimit-Reset": {"30"}, "X-Ratelimit-Remaining": {"many"}}, 30 * time.Second, true},
	{"RateLimit remaining left", http.Header{"Ratelimit": {"limit=100, remaining=7, reset=20"}}, 0, false},
	{"RateLimit structured r left", http.Header{"Ratelimit": {`"default";r=7;t=20`}}, 0, false},
	{"RateLimit structured r spent", http.Header{"Ratelimit": {`"default";r=0;t=20`}}, 20 * time.Second, true},
	// Epoch resets are measured against the server's clock, and never
	// wrap into the past.
	{"epoch against Date", http.Header{"X-Ratelimit-Reset": {strconv.FormatInt(rateLimitNow.Unix()+45, 10)}, "Date": {rateLimitNow.Add(-15 * time.Second).Format(http.TimeFormat)}}, 60 * time.Second, true},
	{"epoch near the int64 maximum", http.Header{"X-Ratelimit-Reset": {strconv.FormatInt(math.MaxInt64-1, 10)}}, math.MaxInt64, true},
	{"epoch at the int64 maximum", http.Header{"X-Ratelimit-Reset": {strconv.FormatInt(math.MaxInt64, 10)}}, math.MaxInt64, true},
	{"epoch at the int64 maximum against Date", http.Header{"X-Ratelimit-Reset": {strconv.FormatInt(math.MaxInt64, 10)}, "Date": {"Wed, 04 Mar 2026 12:00:00 GMT"}}, math.MaxInt64, true},
	{"epoch past the bound", http.Header{"X-Ratelimit-Reset": {strconv.FormatInt(MaxEpochSeconds+1, 10)}}, math.MaxInt64, true},
	{"epoch against a Date in year 0", http.Header{"X-Ratelimit-Reset": {strconv.FormatInt(rateLimitNow.Unix()+45, 10)}, "Date": {"Sat, 01 Jan 0000 00:00:00 GMT"}}, math.MaxInt64, true},
	{"epoch against a Date in year 9999", http.Header{"X-Ratelimit-Reset": {strconv.FormatInt(rateLimitNow.Unix()+45, 10)}, "Date": {"Fri, 31 Dec 9999 23:59:59 GMT"}}, 0, false},
	{"epoch against an unreadable Date", http.Header{"X-Ratelimit-Reset": {"1795435230"}, "X-Ratelimit-Remaining": {"x"}, "Date": {"garbage"}}, 1795435230*time.Second - time.Duration(rateLimitNow.UnixNano()), true},
	// A count of requests left too large for an int64 is still a count
	// above zero.
	{"X-RateLimit-Remaining past the int64 maximum", http.Header{"X-Ratelimit-Reset": {"30"}, "X-Ratelimit-Remaining": {"99999999999999999999"}}, 0, false},
	{"RateLimit remaining past the int64 maximum", http.Header{"Ratelimit": {"remaining=99999999999999999999, reset=20"}}, 0, false},
	{"X-RateLimit-Remaining past the int64 maximum, then a letter", http.Header{"X-Ratelimit-Reset": {"30"}, "X-Ratelimit-Remaining": {"99999999999999999999A"}}, 30 * time.Second, true},
	{"RateLimit r past the int64 maximum, then a letter", http.Header{"Ratelimit": {"r=18700000000000000000A,t=1"}}, time.Second, true},
	{"X-RateLimit-Remaining with a plus sign", http.Header{"X-Ratelimit-Reset": {"30"}, "X-Ratelimit-Remaining": {"+5"}}, 0, false},
	{"X-RateLimit-Remaining with two plus signs", http.Header{"X-Ratelimit-Reset": {"30"}, "X-Ratelimit-Remaining": {"++5"}}, 30 * time.Second, true},
	{"X-RateLimit-Remaining negative", http.Header{"X-Ratelimit-Reset": {"30"}, "X-Ratelimit-Remaining": {"-1"}}, 30 * time.Second, true},
	{"X-RateLimit-Remaining the smallest int64", http.Header{"X-Ratelimit-Reset": {"30"}, "X-Ratelimit-Remaining": {"-9223372036854775808"}}, 30 * time.Second, true},
	{"RateLimit reset of 20 digits", http.Header{"Ratelimit": {"reset=99999999999999999999"}, "X-Ratelimit-Reset": {"-1"}, "X-Ratelimit-Remaining": {"x"}, "Date": {"garbage"}},
		math.MaxInt64, true},
	{"RateLimit reset zero", http.Header{"Ratelimit": {"remaining=0, reset=0"}}, 0, false},
	{"RateLimit reset empty", http.Header{"Ratelimit": {"reset="}}, 0, false},
	{"RateLimit of separators", http.Header{"Ratelimit": {",;,;=,;"}}, 0, false},
	{"RateLimit with a thousand items", http.Header{"Ratelimit": {strings.Repeat("limit=1, ", 1000) + "remaining=0, reset=5"}}, 5 * time.Second, true},
	{"RateLimit with invalid UTF-8", http.Header{"Ratelimit": {"\xffreset=5;r\xfe=1;t=6"}}, 6 * time.Second, true},
}

func TestRateLimitReset(t *testing.T) {
	for _, tt := range rateLimitResetTests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := RateLimitReset(tt.header, rateLimitNow)
			assert.Equal(t, tt.ok, ok)
			assert.Equal(t, tt.want, got)
		})
	}
}

// FuzzRateLimitReset checks that no header a server sends makes
// rateLimitReset panic or report a negative wait; that a wait is reported
// only while the quota is spent, and only from a reset in digits; that a
// reset in seconds is that many seconds, whatever the clocks; and that an
// epoch is measured against a readable Date rather than the client's clock.
func FuzzRateLimitReset(f *testing.F) {
	for _, tt := range rateLimitResetTests {
		f.Add(tt.header.Get("Ratelimit"), tt.header.Get("X-Ratelimit-Reset"), tt.header.Get("X-Ratelimit-Remaining"), tt.header.Get("Date"))
	}
	f.Fuzz(func(t *testing.T, ratelimit, reset, remaining, date string) {
		h := testkit.HeaderOf(map[string]string{"Ratelimit": ratelimit, "X-Ratelimit-Reset": reset, "X-Ratelimit-Remaining": remaining, "Date": date})
		now := rateLimitNow
		d, ok := RateLimitReset(h, now)
		if d < 0 || ok != (d > 0) {
			t.Fatalf("RateLimitReset(%q) = %v, %v", h, d, ok)
		}
		if d2, ok2 := RateLimitReset(h, now); d2 != d || ok2 != ok {
			t.Fatalf("RateLimitReset(%q) = (%v, %v), then (%v, %v)", h, d, ok, d2, ok2)
		}
		if resetParam, remainingParam, found := rateLimitParams(ratelimit); found {
			want, wantOK := ParseDelaySeconds(resetParam)
			if wantOK = wantOK && want > 0 && !countAboveZero(remainingParam); !wantOK {
				want = 0
			}
			if d != want || ok != wantOK {
				t.Fatalf("RateLimitReset(%q) = (%v, %v), want (%v, %v) from the RateLimit header", h, d, ok, want, wantOK)
			}
			return
		}
		if !ok {
			return
		}
		if countAboveZero(remaining) {
			t.Fatalf("RateLimitReset(%q) = %v while the quota remains", h, d)
		}
		r := strings.Trim(reset, " \t")
		if !testkit.IsDigits(r) {
			t.Fatalf("RateLimitReset(%q) = %v, from a reset that is not digits", h, d)
		}
		if n, err := strconv.ParseInt(r, 10, 64); err == nil && n < epochThreshold {
			if d != time.Duration(n)*time.Second {
				t.Fatalf("RateLimitReset(%q) = %v, want %d s", h, d, n)
			}
			if d2, _ := RateLimitReset(h, now.Add(time.Hour)); d2 != d {
				t.Fatalf("RateLimitReset(%q) = %v, but %v an hour later: seconds from now ignore the clock", h, d, d2)
			}
			return
		}
		// An epoch: measured against a readable Date, or else the
		// client's clock, from which it is an hour further an hour before.
		d2, _ := RateLimitReset(h, now.Add(-time.Hour))
		if _, err := http.ParseTime(strings.Trim(date, " \t")); err == nil {
			if d2 != d {
				t.Fatalf("RateLimitReset(%q) = %v, but %v an hour before: an epoch against Date ignores the clock", h, d, d2)
			}
		} else if want := time.Duration(min(uint64(d)+uint64(time.Hour), math.MaxInt64)); d2 != want {
			t.Fatalf("RateLimitReset(%q) = %v, but %v an hour before, want %v", h, d, d2, want)
		}
	})
}

// countAboveZero reports whether s, trimmed of spaces and tabs, is a count
// above zero in ASCII digits, however many, after an optional '+': a rate
// limit's requests left.
func countAboveZero(s string) bool {
	s = strings.TrimPrefix(strings.Trim(s, " \t"), "+")
	return testkit.IsDigits(s) && strings.Trim(s, "0") != ""
}
