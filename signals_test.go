package retryhttp

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/retryhttp/retryhttp/budget"
	"github.com/retryhttp/retryhttp/classify"
	"github.com/retryhttp/retryhttp/internal/layer"
	"github.com/retryhttp/retryhttp/internal/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestServerSignalClassifier(t *testing.T) {
	req := get(t, "http://svc.test/")
	tests := []struct {
		name    string
		c       classify.Classifier
		status  int
		header  http.Header
		want    classify.Verdict
		wantDef classify.Decision // the default chain's decision
	}{
		{"false on 503", classify.ShouldRetry(), 503, http.Header{"X-Should-Retry": {"false"}}, classify.Verdict{Decision: classify.DontRetry}, classify.DontRetry},
		{"true on 200 is ignored", classify.ShouldRetry(), 200, http.Header{"X-Should-Retry": {"true"}}, classify.Verdict{}, classify.DontRetry},
		{"true on 400", classify.ShouldRetry(), 400, http.Header{"X-Should-Retry": {"true"}}, classify.Verdict{Decision: classify.Retry}, classify.Retry},
		{"true on 429 keeps throttle", classify.ShouldRetry(), 429, http.Header{"X-Should-Retry": {"true"}}, classify.Verdict{Decision: classify.Retry, Throttle: true}, classify.Retry},
		{"case and space", classify.ShouldRetry(), 503, http.Header{"X-Should-Retry": {" FALSE "}}, classify.Verdict{Decision: classify.DontRetry}, classify.DontRetry},
		{"other value", classify.ShouldRetry(), 503, http.Header{"X-Should-Retry": {"maybe"}}, classify.Verdict{}, classify.Retry},
		{"absent", classify.ShouldRetry(), 503, http.Header{}, classify.Verdict{}, classify.Retry},
		{"custom header", classify.ShouldRetry("x-retry-ok"), 500, http.Header{"X-Retry-Ok": {"false"}}, classify.Verdict{Decision: classify.DontRetry}, classify.Retry},
		{"first named wins", classify.ShouldRetry("A-Retry", "B-Retry"), 500, http.Header{"A-Retry": {"true"}, "B-Retry": {"false"}}, classify.Verdict{Decision: classify.Retry}, classify.Retry},
		{"second named when first absent", classify.ShouldRetry("A-Retry", "B-Retry"), 500, http.Header{"B-Retry": {"false"}}, classify.Verdict{Decision: classify.DontRetry}, classify.Retry},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := &http.Response{StatusCode: tt.status, Header: tt.header}
			assert.Equal(t, tt.want, tt.c.Classify(req, resp, nil))
			assert.Equal(t, tt.wantDef, classify.Default().Classify(req, resp, nil).Decision, "default chain")
		})
	}
	assert.Equal(t, classify.Verdict{}, classify.ShouldRetry().Classify(req, nil, errRead), "errors: no opinion")
}

func TestServerSignalInTransport(t *testing.T) {
	tests := []struct {
		name     string
		method   string
		status   int
		signal   string
		attempts int
	}{
		{"false stops a retryable status", http.MethodGet, 503, "false", 1},
		{"true retries a final status", http.MethodGet, 400, "true", 3},
		{"true does not override idempotency", http.MethodPost, 400, "true", 1},
		{"absent leaves the default", http.MethodGet, 503, "", 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := http.Header{}
				if tt.signal != "" {
					h.Set(wire.ShouldRetryHeader, tt.signal)
				}
				base := &script{steps: []step{{status: tt.status, header: h}}}
				req, _ := withBody(t, t.Context(), tt.method, "http://svc.test/", "x", true)
				resp, err := newTestTransport(base, 0).RoundTrip(req)
				require.NoError(t, err)
				resp.Body.Close()
				assert.Equal(t, tt.attempts, base.count())
				assert.Equal(t, tt.signal, resp.Header.Get(wire.ShouldRetryHeader))
			})
		})
	}
}

func TestIdempotencyConflicts(t *testing.T) {
	tests := []struct {
		name     string
		key      bool
		status   int
		attempts int
		delay    time.Duration
	}{
		{"409 with a key waits and retries", true, 409, 2, 500 * time.Millisecond},
		{"409 without a key is final", false, 409, 1, 0},
		{"422 with a key is final", true, 422, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				base := &script{steps: []step{{status: tt.status}, {status: 201}}}
				req, _ := withBody(t, t.Context(), http.MethodPost, "http://svc.test/", "x", true)
				if tt.key {
					req.Header.Set("Idempotency-Key", "k-1")
				}
				start := time.Now()
				resp, err := newTestTransport(base, 0.5).RoundTrip(req)
				require.NoError(t, err)
				resp.Body.Close()
				require.Equal(t, tt.attempts, base.count())
				if tt.attempts == 2 {
					assert.Equal(t, tt.delay, base.times[1].Sub(start), "paced by the throttle backoff")
					assert.Equal(t, 201, resp.StatusCode)
				}
			})
		})
	}
	// The automatic key counts too.
	synctest.Test(t, func(t *testing.T) {
		base := &script{steps: []step{{status: 409}, {status: 201}}}
		req, _ := withBody(t, t.Context(), http.MethodPost, "http://svc.test/", "x", true)
		resp, err := newTestTransport(base, 0.5, WithIdempotencyKeys()).RoundTrip(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, 2, base.count())
	})
}

func TestRetryAfterDateAgainstResponseDate(t *testing.T) {
	// The client's clock is an hour behind the server's. Measured against
	// the client's clock, the Retry-After date is over an hour away and is
	// not waited for; measured against the response's Date, it is 10 s.
	tests := []struct {
		name     string
		withDate bool
		attempts int
	}{
		{"with Date", true, 2},
		{"without Date", false, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				serverNow := time.Now()
				h := http.Header{"Retry-After": {serverNow.Add(10 * time.Second).UTC().Format(http.TimeFormat)}}
				if tt.withDate {
					h.Set("Date", serverNow.UTC().Format(http.TimeFormat))
				}
				base := &script{steps: []step{{status: 503, header: h}, {status: 200}}}
				tr := newTestTransport(base, 0)
				tr.now = func() time.Time { return time.Now().Add(-time.Hour) }
				start := time.Now()
				resp, err := tr.RoundTrip(get(t, "http://svc.test/"))
				require.NoError(t, err)
				resp.Body.Close()
				require.Equal(t, tt.attempts, base.count())
				if tt.attempts == 2 {
					assert.Equal(t, 10*time.Second, base.times[1].Sub(start))
				}
			})
		})
	}
}

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
	{"epoch past the bound", http.Header{"X-Ratelimit-Reset": {strconv.FormatInt(wire.MaxEpochSeconds+1, 10)}}, math.MaxInt64, true},
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
			got, ok := rateLimitReset(tt.header, rateLimitNow)
			assert.Equal(t, tt.ok, ok)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestRateLimitHintsInTransport(t *testing.T) {
	tests := []struct {
		name     string
		status   int
		reset    string
		hints    bool
		attempts int
		wait     time.Duration
	}{
		{"floor on 429", 429, "5", true, 2, 5 * time.Second},
		{"ignored without the option", 429, "5", false, 2, 0},
		{"ignored on a 500", 500, "5", true, 2, 0},
		{"over the limit ends retries", 429, "3600", true, 1, 0},
		{"an epoch far away ends retries", 429, "9223372036854775806", true, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				base := &script{steps: []step{{status: tt.status, header: http.Header{"X-Ratelimit-Reset": {tt.reset}}}, {status: 200}}}
				var opts []Option
				if tt.hints {
					opts = append(opts, WithRateLimitHints())
				}
				start := time.Now()
				resp, err := newTestTransport(base, 0, opts...).RoundTrip(get(t, "http://svc.test/"))
				require.NoError(t, err)
				resp.Body.Close()
				require.Equal(t, tt.attempts, base.count())
				if tt.attempts == 2 {
					assert.Equal(t, tt.wait, base.times[1].Sub(start))
				}
			})
		})
	}
}

func TestRateLimitResetIgnoredWhileQuotaRemains(t *testing.T) {
	// GitHub sends its window's reset with every response: a 429 that asks
	// for one second while 4990 requests remain is retried after one
	// second, not after the window.
	for _, reset := range []time.Duration{20 * time.Second, 40 * time.Minute} {
		t.Run(reset.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := http.Header{
					"Retry-After":           {"1"},
					"X-Ratelimit-Remaining": {"4990"},
					"X-Ratelimit-Reset":     {strconv.FormatInt(time.Now().Add(reset).Unix(), 10)},
				}
				base := &script{steps: []step{{status: 429, header: h}, {status: 200}}}
				start := time.Now()
				resp, err := newTestTransport(base, 0, WithRateLimitHints()).RoundTrip(get(t, "http://svc.test/"))
				require.NoError(t, err)
				resp.Body.Close()
				require.Equal(t, 2, base.count())
				assert.Equal(t, time.Second, base.times[1].Sub(start))
			})
		})
	}
}

func TestAttemptHeader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := &script{steps: statuses(503, 502, 200)}
		req := get(t, "http://svc.test/")
		resp, err := newTestTransport(base, 0, WithAttemptHeader("retry-attempt")).RoundTrip(req)
		require.NoError(t, err)
		resp.Body.Close()
		var got []string
		for _, h := range base.headers {
			got = append(got, h.Get("Retry-Attempt"))
		}
		assert.Equal(t, []string{"1/3", "2/3", "3/3"}, got)
		assert.Empty(t, req.Header.Get("Retry-Attempt"), "caller's header untouched")
	})
	for _, bad := range []string{"", "bad header", "a:b", "é"} {
		assert.Panics(t, func() { WithAttemptHeader(bad) }, "%q", bad)
	}
}

func TestGiveUpMarksServedRequest(t *testing.T) {
	tests := []struct {
		name   string
		steps  []step
		opts   []Option
		marked bool
	}{
		{"success", statuses(200), nil, false},
		{"not found", statuses(404), nil, false},
		{"attempts exhausted", statuses(503), nil, true},
		{"dependency said no", []step{{status: 503, header: http.Header{"X-Should-Retry": {"false"}}}}, nil, true},
		{"budget empty", statuses(503), []Option{WithBudget(budget.NewBucket(budget.Capacity(5), budget.TimeoutCost(5)))}, true},
		{"error", []step{{err: dialRefused}}, nil, true},
		{"recovered", statuses(503, 200), nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				state := &layer.Serving{}
				ctx := layer.NewContext(t.Context(), state)
				resp, err := newTestTransport(&script{steps: tt.steps}, 0, tt.opts...).RoundTrip(get(t, "http://svc.test/").WithContext(ctx))
				if err == nil {
					resp.Body.Close()
				}
				assert.Equal(t, tt.marked, state.GaveUp())
			})
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
		h := headerOf(map[string]string{"Ratelimit": ratelimit, "X-Ratelimit-Reset": reset, "X-Ratelimit-Remaining": remaining, "Date": date})
		now := rateLimitNow
		d, ok := rateLimitReset(h, now)
		if d < 0 || ok != (d > 0) {
			t.Fatalf("rateLimitReset(%q) = %v, %v", h, d, ok)
		}
		if d2, ok2 := rateLimitReset(h, now); d2 != d || ok2 != ok {
			t.Fatalf("rateLimitReset(%q) = (%v, %v), then (%v, %v)", h, d, ok, d2, ok2)
		}
		if resetParam, remainingParam, found := rateLimitParams(ratelimit); found {
			want, wantOK := wire.ParseDelaySeconds(resetParam)
			if wantOK = wantOK && want > 0 && !countAboveZero(remainingParam); !wantOK {
				want = 0
			}
			if d != want || ok != wantOK {
				t.Fatalf("rateLimitReset(%q) = (%v, %v), want (%v, %v) from the RateLimit header", h, d, ok, want, wantOK)
			}
			return
		}
		if !ok {
			return
		}
		if countAboveZero(remaining) {
			t.Fatalf("rateLimitReset(%q) = %v while the quota remains", h, d)
		}
		r := strings.Trim(reset, " \t")
		if !isDigits(r) {
			t.Fatalf("rateLimitReset(%q) = %v, from a reset that is not digits", h, d)
		}
		if n, err := strconv.ParseInt(r, 10, 64); err == nil && n < epochThreshold {
			if d != time.Duration(n)*time.Second {
				t.Fatalf("rateLimitReset(%q) = %v, want %d s", h, d, n)
			}
			if d2, _ := rateLimitReset(h, now.Add(time.Hour)); d2 != d {
				t.Fatalf("rateLimitReset(%q) = %v, but %v an hour later: seconds from now ignore the clock", h, d, d2)
			}
			return
		}
		// An epoch: measured against a readable Date, or else the
		// client's clock, from which it is an hour further an hour before.
		d2, _ := rateLimitReset(h, now.Add(-time.Hour))
		if _, err := http.ParseTime(strings.Trim(date, " \t")); err == nil {
			if d2 != d {
				t.Fatalf("rateLimitReset(%q) = %v, but %v an hour before: an epoch against Date ignores the clock", h, d, d2)
			}
		} else if want := time.Duration(min(uint64(d)+uint64(time.Hour), math.MaxInt64)); d2 != want {
			t.Fatalf("rateLimitReset(%q) = %v, but %v an hour before, want %v", h, d, d2, want)
		}
	})
}

// countAboveZero reports whether s, trimmed of spaces and tabs, is a count
// above zero in ASCII digits, however many, after an optional '+': a rate
// limit's requests left.
func countAboveZero(s string) bool {
	s = strings.TrimPrefix(strings.Trim(s, " \t"), "+")
	return isDigits(s) && strings.Trim(s, "0") != ""
}
