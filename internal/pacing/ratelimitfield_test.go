package pacing

import (
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rateLimitFieldsTests is shared by TestReadRateLimitFields and the seed
// corpus of FuzzReadRateLimitFields: the values of RateLimit,
// RateLimit-Policy, and the older RateLimit-Remaining, RateLimit-Reset and
// RateLimit-Limit.
var rateLimitFieldsTests = []struct {
	name                             string
	rateLimit, policy                string
	oldRemaining, oldReset, oldLimit string
	want                             quota
	ok                               bool
}{
	{"the draft's example", `"default";r=50;t=30`, `"default";q=100;w=60`, "", "", "",
		quota{Remaining: 50, Reset: 30 * time.Second, Limit: 100, Window: time.Minute}, true},
	{"token names", `default;r=10;t=5`, `default;q=20;w=10`, "", "", "",
		quota{Remaining: 10, Reset: 5 * time.Second, Limit: 20, Window: 10 * time.Second}, true},
	{"the most restrictive item, with its policy", `"burst";r=50;t=30, "day";r=5;t=60`, `"burst";q=100;w=60, "day";q=1000;w=86400`, "", "", "",
		quota{Remaining: 5, Reset: time.Minute, Limit: 1000, Window: 24 * time.Hour}, true},
	{"a spent item comes first", `"a";r=1;t=1, "b";r=0;t=10`, "", "", "", "",
		quota{Remaining: 0, Reset: 10 * time.Second}, true},
	{"no policy of the same name: the tightest", `"x";r=5;t=10`, `"a";q=100;w=10, "b";q=10;w=10`, "", "", "",
		quota{Remaining: 5, Reset: 10 * time.Second, Limit: 10, Window: 10 * time.Second}, true},
	{"other parameters", `"default";r=50;t=30;pk=:cHJvamVjdDEyMw==:`, `"default";q=100;qu="requests";w=60`, "", "", "",
		quota{Remaining: 50, Reset: 30 * time.Second, Limit: 100, Window: time.Minute}, true},
	{"lines of one field", "\"a\";r=50;t=30\n\"b\";r=1;t=30", "", "", "", "",
		quota{Remaining: 1, Reset: 30 * time.Second}, true},
	{"no t", `"default";r=7`, "", "", "", "", quota{Remaining: 7}, true},
	{"the largest integers", `"d";r=999999999999999;t=999999999999999`, "", "", "", "",
		quota{Remaining: 999999999999999, Reset: math.MaxInt64}, true},
	{"policy alone", "", `"default";q=100;w=60`, "", "", "", quota{Remaining: -1, Limit: 100, Window: time.Minute}, true},
	{"a trailing comma: ignored", `"default";r=50;t=30,`, "", "", "", "", noQuota, false},
	{"an inner list: ignored", `("a" "b");r=1;t=1`, "", "", "", "", noQuota, false},
	{"16 digits: ignored", `"d";r=1234567890123456;t=1`, "", "", "", "", noQuota, false},
	{"an unterminated string: ignored", `"default;r=50;t=30`, "", "", "", "", noQuota, false},
	{"r negative: the item ignored", `"default";r=-1;t=30`, "", "", "", "", noQuota, false},
	{"r a decimal: the item ignored", `"default";r=1.5;t=30`, "", "", "", "", noQuota, false},
	{"a malformed policy: ignored", `"default";r=50;t=30`, `"default";q=100;w=60;`, "", "", "",
		quota{Remaining: 50, Reset: 30 * time.Second}, true},
	{"too long: ignored", `"d";r=1;t=1,` + strings.Repeat(` "e";r=9;t=1,`, 100) + ` "f";r=9;t=1`, "", "", "", "", noQuota, false},
	{"the older dictionary", `limit=100, remaining=50, reset=30`, "", "", "", "",
		quota{Remaining: 50, Reset: 30 * time.Second, Limit: 100}, true},
	{"the older fields, the tightest policy", "", "", "50", "30", "100, 100;w=60, 1000;w=3600",
		quota{Remaining: 50, Reset: 30 * time.Second, Limit: 1000, Window: time.Hour}, true},
	{"the older fields, a bare limit", "", "", "0", "5", "10",
		quota{Remaining: 0, Reset: 5 * time.Second, Limit: 10}, true},
	{"the older fields, no remaining", "", "", "", "5", "10", noQuota, false},
	{"nothing", "", "", "", "", "", noQuota, false},
}

func rateLimitHeader(rateLimit, policy, oldRemaining, oldReset, oldLimit string) http.Header {
	h := http.Header{}
	for _, line := range strings.Split(rateLimit, "\n") {
		if line != "" {
			h.Add("Ratelimit", line)
		}
	}
	if policy != "" {
		h.Set("Ratelimit-Policy", policy)
	}
	return withOld(h, oldRemaining, oldReset, oldLimit)
}

func withOld(h http.Header, remaining, reset, limit string) http.Header {
	for k, v := range map[string]string{"Ratelimit-Remaining": remaining, "Ratelimit-Reset": reset, "Ratelimit-Limit": limit} {
		if v != "" {
			h.Set(k, v)
		}
	}
	return h
}

func TestReadRateLimitFields(t *testing.T) {
	for _, tt := range rateLimitFieldsTests {
		t.Run(tt.name, func(t *testing.T) {
			h := rateLimitHeader(tt.rateLimit, tt.policy, tt.oldRemaining, tt.oldReset, tt.oldLimit)
			got, ok := readRateLimitFields(h, testNow)
			assert.Equal(t, tt.ok, ok, "readRateLimitFields: ok")
			assert.Equal(t, tt.want, got, "readRateLimitFields: quota")
		})
	}
}

// FuzzReadRateLimitFields checks the reader of the IETF fields: no panic,
// nothing out of bounds, the same answer twice, and a field that is not a
// valid list ignored entirely, as if it were absent.
func FuzzReadRateLimitFields(f *testing.F) {
	for _, tt := range rateLimitFieldsTests {
		f.Add(tt.rateLimit, tt.policy, tt.oldRemaining, tt.oldReset, tt.oldLimit)
	}
	f.Fuzz(func(t *testing.T, rateLimit, policy, oldRemaining, oldReset, oldLimit string) {
		h := withOld(http.Header{"Ratelimit": {rateLimit}, "Ratelimit-Policy": {policy}}, oldRemaining, oldReset, oldLimit)
		q, ok := readRateLimitFields(h, testNow)
		checkQuota(t, "readRateLimitFields", q, ok)
		if q2, ok2 := readRateLimitFields(h, testNow); q2 != q || ok2 != ok {
			t.Fatalf("read twice: got (%+v, %t) then (%+v, %t)", q, ok, q2, ok2)
		}
		if !parseSFList(policy, func(sfMember) bool { return true }) {
			without := withOld(http.Header{"Ratelimit": {rateLimit}}, oldRemaining, oldReset, oldLimit)
			if q2, ok2 := readRateLimitFields(without, testNow); q2 != q || ok2 != ok {
				t.Fatalf("an invalid RateLimit-Policy %q changed the quota: (%+v, %t) without it, (%+v, %t) with it", policy, q2, ok2, q, ok)
			}
		}
	})
}

func TestReadQuotaTakesTheTightest(t *testing.T) {
	h := header("X-Ratelimit-Remaining", "4000", "X-Ratelimit-Reset", unix(time.Hour), "X-Ratelimit-Limit", "5000",
		"Ratelimit", `"default";r=1;t=60`)
	got, ok := readQuota(h, testNow)
	assert.True(t, ok)
	assert.Equal(t, quota{Remaining: 1, Reset: time.Minute}, got, "of 4000 an hour and 1 a minute")

	got, ok = readQuota(http.Header{"Content-Type": {"text/plain"}}, testNow)
	assert.False(t, ok, "a header without a quota")
	assert.Equal(t, noQuota, got)
}

func TestQuotaLow(t *testing.T) {
	for _, tt := range []struct {
		q    quota
		want bool
	}{
		{quota{Remaining: 0}, true},
		{quota{Remaining: 10, Limit: 100}, true},
		{quota{Remaining: 11, Limit: 100}, false},
		{quota{Remaining: 1}, false}, // no limit: only a spent quota is low
		{quota{Remaining: -1, Limit: 100}, false},
	} {
		assert.Equal(t, tt.want, tt.q.low(), "%+v.low()", tt.q)
	}
}

// TestReadQuotaDisbelievesAFarReset: a reset more than a day off is read
// as none said, in every form; one within a day is kept.
func TestReadQuotaDisbelievesAFarReset(t *testing.T) {
	for _, tt := range []struct {
		name string
		h    http.Header
		want time.Duration
	}{
		{"GitHub, year 2286", header("X-Ratelimit-Remaining", "2", "X-Ratelimit-Limit", "50", "X-Ratelimit-Reset", "9999999999"), 0},
		{"OpenAI, a century", header("X-Ratelimit-Remaining-Requests", "2", "X-Ratelimit-Limit-Requests", "50", "X-Ratelimit-Reset-Requests", "876000h0m0s"), 0},
		{"Anthropic, year 9999", header("Anthropic-Ratelimit-Requests-Remaining", "2", "Anthropic-Ratelimit-Requests-Limit", "50", "Anthropic-Ratelimit-Requests-Reset", "9999-12-31T23:59:59Z"), 0},
		{"IETF, 31 years", header("RateLimit", `"default";r=2;t=999999999`), 0},
		{"OpenAI, a day", header("X-Ratelimit-Remaining-Requests", "2", "X-Ratelimit-Limit-Requests", "50", "X-Ratelimit-Reset-Requests", "24h"), 24 * time.Hour},
	} {
		t.Run(tt.name, func(t *testing.T) {
			q, ok := readQuota(tt.h, testNow)
			require.True(t, ok)
			assert.Equal(t, int64(2), q.Remaining)
			assert.Equal(t, tt.want, q.Reset)
		})
	}
}
