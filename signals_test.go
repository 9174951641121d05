package retryhttp

import (
	"net/http"
	"strconv"
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
