package pacing

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/retryhttp/retryhttp/internal/wire"
	"github.com/stretchr/testify/assert"
)

// testNow is the client's clock in the tests: Wednesday, 4 March 2026,
// 12:00:00 UTC.
var testNow = time.Date(2026, time.March, 4, 12, 0, 0, 0, time.UTC)

// header returns a header of the pairs kv, a pair with an empty value
// left out.
func header(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			h.Add(kv[i], kv[i+1])
		}
	}
	return h
}

// checkQuota fails t when q, read as ok from a header, breaks what every
// reader promises.
func checkQuota(t *testing.T, what string, q quota, ok bool) {
	t.Helper()
	if !ok {
		if q != noQuota {
			t.Fatalf("%s: got (%+v, false), want the quota of no quota", what, q)
		}
		return
	}
	if q.Remaining < -1 || q.Reset < 0 || q.Limit < 0 || q.Window < 0 {
		t.Fatalf("%s: got %+v, want Remaining >= -1 and Reset, Limit, Window >= 0", what, q)
	}
	if !q.known() {
		t.Fatalf("%s: got %+v, reported, but it says nothing pacing uses", what, q)
	}
}

func unix(d time.Duration) string { return strconv.FormatInt(testNow.Add(d).Unix(), 10) }

// xRateLimitTests is shared by TestReadXRateLimit and the seed corpus of
// FuzzReadXRateLimit.
var xRateLimitTests = []struct {
	name                          string
	remaining, reset, limit, date string
	want                          quota
	ok                            bool
}{
	{"GitHub, an hour left", "4999", unix(time.Hour), "5000", "", quota{Remaining: 4999, Reset: time.Hour, Limit: 5000}, true},
	{"spent", "0", unix(45 * time.Second), "5000", "", quota{Remaining: 0, Reset: 45 * time.Second, Limit: 5000}, true},
	{"reset in seconds from now", "10", "30", "", "", quota{Remaining: 10, Reset: 30 * time.Second}, true},
	{"reset passed", "10", unix(-time.Minute), "60", "", quota{Remaining: 10, Limit: 60}, true},
	{"reset 0", "10", "0", "60", "", quota{Remaining: 10, Limit: 60}, true},
	{"reset against the response's Date", "1", unix(time.Minute), "", testNow.Add(30 * time.Second).Format(http.TimeFormat), quota{Remaining: 1, Reset: 30 * time.Second}, true},
	{"reset unreadable", "1", "soon", "", "", quota{Remaining: 1}, true},
	{"reset far past what a Duration holds", "1", strings.Repeat("9", 30), "", "", quota{Remaining: 1, Reset: math.MaxInt64}, true},
	{"remaining past int64", strings.Repeat("9", 30), "", "", "", quota{Remaining: math.MaxInt64}, true},
	{"remaining trimmed", " 7\t", "", "", "", quota{Remaining: 7}, true},
	{"remaining with a space inside", "7 7", "", "", "", noQuota, false},
	{"no remaining", "", "30", "100", "", noQuota, false},
	{"remaining negative", "-1", "30", "", "", noQuota, false},
	{"remaining fractional", "1.5", "30", "", "", noQuota, false},
	{"remaining too long", strings.Repeat("1", 65), "30", "", "", noQuota, false},
	{"limit unreadable", "3", "", "lots", "", quota{Remaining: 3}, true},
}

func TestReadXRateLimit(t *testing.T) {
	for _, tt := range xRateLimitTests {
		t.Run(tt.name, func(t *testing.T) {
			h := header("X-Ratelimit-Remaining", tt.remaining,
				"X-Ratelimit-Reset", tt.reset, "X-Ratelimit-Limit", tt.limit, "Date", tt.date)
			got, ok := readXRateLimit(h, testNow)
			assert.Equal(t, tt.ok, ok, "readXRateLimit: ok")
			assert.Equal(t, tt.want, got, "readXRateLimit: quota")
		})
	}
}

// FuzzReadXRateLimit checks GitHub's reader: a quota only from a
// remaining count of digits, which it reads as wire.Digits does, and
// nothing out of bounds.
func FuzzReadXRateLimit(f *testing.F) {
	for _, tt := range xRateLimitTests {
		f.Add(tt.remaining, tt.reset, tt.limit, tt.date)
	}
	f.Fuzz(func(t *testing.T, remaining, reset, limit, date string) {
		h := http.Header{"X-Ratelimit-Remaining": {remaining}, "X-Ratelimit-Reset": {reset}, "X-Ratelimit-Limit": {limit}, "Date": {date}}
		q, ok := readXRateLimit(h, testNow)
		checkQuota(t, "readXRateLimit", q, ok)
		n, digits := wire.Digits(wire.TrimOWS(remaining))
		if want := digits && len(remaining) <= maxValueLen; ok != want {
			t.Fatalf("remaining %q: got ok %t, want %t", remaining, ok, want)
		}
		if ok && q.Remaining != n {
			t.Fatalf("remaining %q: got %d, want %d", remaining, q.Remaining, n)
		}
	})
}

// parseResetDurationTests is shared by TestParseResetDuration and the seed
// corpus of FuzzParseResetDuration.
var parseResetDurationTests = []struct {
	in   string
	want time.Duration
	ok   bool
}{
	{"6m0s", 6 * time.Minute, true},
	{"1s", time.Second, true},
	{"20ms", 20 * time.Millisecond, true},
	{"1h2m3.5s", time.Hour + 2*time.Minute + 3500*time.Millisecond, true},
	{"0s", 0, true},
	{"0", 0, true},
	{"2562047h", 2562047 * time.Hour, true},
	{"9223372036854775807ns", math.MaxInt64, true},
	{"9223372036854775808ns", 0, false},
	{"2562048h", 0, false},
	{"", 0, false},
	{"1", 0, false},
	{"-1s", 0, false},
	{"+1s", 0, false},
	{".5s", 0, false},
	{"1.5e3s", 0, false},
	{"1d", 0, false},
	{"1 s", 0, false},
	{"NaN", 0, false},
	{strings.Repeat("1", 62) + "ns", 0, false},
	{strings.Repeat("0", 63) + "1s", 0, false}, // too long to be meant
}

func TestParseResetDuration(t *testing.T) {
	for _, tt := range parseResetDurationTests {
		t.Run(strconv.Quote(tt.in), func(t *testing.T) {
			got, ok := parseResetDuration(tt.in)
			assert.Equal(t, tt.ok, ok, "parseResetDuration(%q): ok", tt.in)
			assert.Equal(t, tt.want, got, "parseResetDuration(%q): duration", tt.in)
		})
	}
}

// FuzzParseResetDuration checks OpenAI's durations against
// time.ParseDuration: the same duration where it reads one without a sign
// from at most maxValueLen bytes, never a negative one, nothing else.
func FuzzParseResetDuration(f *testing.F) {
	for _, tt := range parseResetDurationTests {
		f.Add(tt.in)
	}
	f.Fuzz(func(t *testing.T, in string) {
		d, ok := parseResetDuration(in)
		want, err := time.ParseDuration(in)
		wantOK := err == nil && len(in) <= maxValueLen && in != "" && in[0] >= '0' && in[0] <= '9'
		if ok != wantOK || ok && d != want || !ok && d != 0 || d < 0 {
			t.Fatalf("parseResetDuration(%q) = (%v, %t), want (%v, %t)", in, d, ok, want, wantOK)
		}
	})
}

// openAITests is shared by TestReadOpenAI and the seed corpus of
// FuzzReadOpenAI.
var openAITests = []struct {
	name                    string
	remaining, limit, reset string
	want                    quota
	ok                      bool
}{
	{"a minute's bucket", "59", "60", "1s", quota{Remaining: 59, Reset: time.Second, Limit: 60, Bucket: true}, true},
	{"spent", "0", "5000", "6m0s", quota{Remaining: 0, Reset: 6 * time.Minute, Limit: 5000, Bucket: true}, true},
	{"milliseconds", "9", "10", "20ms", quota{Remaining: 9, Reset: 20 * time.Millisecond, Limit: 10, Bucket: true}, true},
	{"hours", "1", "10000", "1h2m3.5s", quota{Remaining: 1, Reset: time.Hour + 2*time.Minute + 3500*time.Millisecond, Limit: 10000, Bucket: true}, true},
	{"reset unreadable", "3", "10", "-1s", quota{Remaining: 3, Limit: 10, Bucket: true}, true},
	{"limit unreadable", "3", "ten", "1s", quota{Remaining: 3, Reset: time.Second, Bucket: true}, true},
	{"no remaining", "", "60", "1s", noQuota, false},
	{"remaining not a count", "59.0", "60", "1s", noQuota, false},
}

func TestReadOpenAI(t *testing.T) {
	for _, tt := range openAITests {
		t.Run(tt.name, func(t *testing.T) {
			h := header("X-Ratelimit-Remaining-Requests", tt.remaining, "X-Ratelimit-Limit-Requests", tt.limit, "X-Ratelimit-Reset-Requests", tt.reset)
			got, ok := readOpenAI(h, testNow)
			assert.Equal(t, tt.ok, ok, "readOpenAI: ok")
			assert.Equal(t, tt.want, got, "readOpenAI: quota")
		})
	}
}

// FuzzReadOpenAI checks OpenAI's reader: a bucket only from a remaining
// count of digits, its reset as parseResetDuration reads it.
func FuzzReadOpenAI(f *testing.F) {
	for _, tt := range openAITests {
		f.Add(tt.remaining, tt.limit, tt.reset)
	}
	f.Fuzz(func(t *testing.T, remaining, limit, reset string) {
		h := http.Header{"X-Ratelimit-Remaining-Requests": {remaining}, "X-Ratelimit-Limit-Requests": {limit}, "X-Ratelimit-Reset-Requests": {reset}}
		q, ok := readOpenAI(h, testNow)
		checkQuota(t, "readOpenAI", q, ok)
		if !ok {
			return
		}
		if !q.Bucket {
			t.Fatalf("got %+v, want a bucket", q)
		}
		if d, dok := parseResetDuration(wire.TrimOWS(reset)); len(reset) <= maxValueLen && dok && q.Reset != d {
			t.Fatalf("reset %q: got %v, want %v", reset, q.Reset, d)
		}
	})
}

// anthropicTests is shared by TestReadAnthropic and the seed corpus of
// FuzzReadAnthropic.
var anthropicTests = []struct {
	name                          string
	remaining, limit, reset, date string
	want                          quota
	ok                            bool
}{
	{"half a minute", "49", "50", "2026-03-04T12:00:30Z", "", quota{Remaining: 49, Reset: 30 * time.Second, Limit: 50, Bucket: true}, true},
	{"fraction of a second", "0", "50", "2026-03-04T12:00:01.25Z", "", quota{Remaining: 0, Reset: 1250 * time.Millisecond, Limit: 50, Bucket: true}, true},
	{"another zone", "1", "50", "2026-03-04T13:00:02+01:00", "", quota{Remaining: 1, Reset: 2 * time.Second, Limit: 50, Bucket: true}, true},
	{"against the Date of a server whose clock is off", "1", "50", "2026-03-04T12:00:30Z", "Wed, 04 Mar 2026 12:00:20 GMT", quota{Remaining: 1, Reset: 9500 * time.Millisecond, Limit: 50, Bucket: true}, true},
	{"in milliseconds, against the client's clock that the Date agrees with", "0", "50", "2026-03-04T12:00:00.3Z", "Wed, 04 Mar 2026 11:59:59 GMT", quota{Remaining: 0, Reset: 300 * time.Millisecond, Limit: 50, Bucket: true}, true},
	{"passed", "1", "50", "2026-03-04T11:59:00Z", "", quota{Remaining: 1, Limit: 50, Bucket: true}, true},
	{"year 9999", "1", "", "9999-12-31T23:59:59Z", "", quota{Remaining: 1, Reset: math.MaxInt64, Bucket: true}, true},
	{"not RFC 3339", "1", "50", "Wed, 04 Mar 2026 12:00:30 GMT", "", quota{Remaining: 1, Limit: 50, Bucket: true}, true},
	{"no remaining", "", "50", "2026-03-04T12:00:30Z", "", noQuota, false},
}

func TestReadAnthropic(t *testing.T) {
	for _, tt := range anthropicTests {
		t.Run(tt.name, func(t *testing.T) {
			h := header("Anthropic-Ratelimit-Requests-Remaining", tt.remaining, "Anthropic-Ratelimit-Requests-Limit", tt.limit,
				"Anthropic-Ratelimit-Requests-Reset", tt.reset, "Date", tt.date)
			got, ok := readAnthropic(h, testNow)
			assert.Equal(t, tt.ok, ok, "readAnthropic: ok")
			assert.Equal(t, tt.want, got, "readAnthropic: quota")
		})
	}
}

// FuzzReadAnthropic checks Anthropic's reader: no panic, nothing out of
// bounds, a reset no later than the time it names.
func FuzzReadAnthropic(f *testing.F) {
	for _, tt := range anthropicTests {
		f.Add(tt.remaining, tt.limit, tt.reset, tt.date)
	}
	f.Fuzz(func(t *testing.T, remaining, limit, reset, date string) {
		h := http.Header{"Anthropic-Ratelimit-Requests-Remaining": {remaining}, "Anthropic-Ratelimit-Requests-Limit": {limit},
			"Anthropic-Ratelimit-Requests-Reset": {reset}, "Date": {date}}
		q, ok := readAnthropic(h, testNow)
		checkQuota(t, "readAnthropic", q, ok)
		if ok && !q.Bucket {
			t.Fatalf("got %+v, want a bucket", q)
		}
	})
}

// shopifyTests is shared by TestReadShopify and the seed corpus of
// FuzzReadShopify.
var shopifyTests = []struct {
	in   string
	want quota
	ok   bool
}{
	{"32/40", quota{Remaining: 8, Reset: 16 * time.Second, Limit: 40, Window: 20 * time.Second, Bucket: true}, true},
	{"0/40", quota{Remaining: 40, Limit: 40, Window: 20 * time.Second, Bucket: true}, true},
	{"40/40", quota{Remaining: 0, Reset: 20 * time.Second, Limit: 40, Window: 20 * time.Second, Bucket: true}, true},
	{"399/400", quota{Remaining: 1, Reset: 19950 * time.Millisecond, Limit: 400, Window: 20 * time.Second, Bucket: true}, true},
	{"50/40", quota{Remaining: 0, Reset: 20 * time.Second, Limit: 40, Window: 20 * time.Second, Bucket: true}, true},
	{" 32 / 40 ", quota{Remaining: 8, Reset: 16 * time.Second, Limit: 40, Window: 20 * time.Second, Bucket: true}, true},
	{strings.Repeat("9", 25) + "/" + strings.Repeat("9", 25), quota{Remaining: 0, Reset: 20 * time.Second, Limit: math.MaxInt64, Window: 20 * time.Second, Bucket: true}, true},
	{"1/0", noQuota, false},
	{"32/40/5", noQuota, false},
	{"/40", noQuota, false},
	{"32/", noQuota, false},
	{"32", noQuota, false},
	{"-1/40", noQuota, false},
	{"", noQuota, false},
}

func TestReadShopify(t *testing.T) {
	for _, tt := range shopifyTests {
		t.Run(strconv.Quote(tt.in), func(t *testing.T) {
			got, ok := readShopify(header("X-Shopify-Shop-Api-Call-Limit", tt.in), testNow)
			assert.Equal(t, tt.ok, ok, "readShopify(%q): ok", tt.in)
			assert.Equal(t, tt.want, got, "readShopify(%q): quota", tt.in)
		})
	}
}

// FuzzReadShopify checks Shopify's reader: a bucket whose room is at most
// its size and that leaks empty within its window.
func FuzzReadShopify(f *testing.F) {
	for _, tt := range shopifyTests {
		f.Add(tt.in)
	}
	f.Fuzz(func(t *testing.T, in string) {
		q, ok := readShopify(http.Header{"X-Shopify-Shop-Api-Call-Limit": {in}}, testNow)
		checkQuota(t, "readShopify", q, ok)
		if ok && (q.Remaining > q.Limit || q.Limit < 1 || q.Reset > shopifyWindow || !q.Bucket) {
			t.Fatalf("readShopify(%q) = %+v, want room within a bucket that leaks in %v", in, q, shopifyWindow)
		}
	})
}
