package otelretry_test

import (
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/budget"
	"github.com/retryhttp/retryhttp/otelretry"
	"github.com/retryhttp/retryhttp/throttle"
)

func TestMetricsAfterScriptedRun(t *testing.T) {
	// Three GETs to one host: /flaky fails twice then succeeds, /ok
	// succeeds, /down fails three times and is given up on.
	synctest.Test(t, func(t *testing.T) {
		tel := newTelemetry(t)
		base := newScript(map[string][]step{
			"/flaky": {{status: 503}, {err: refused}, {status: 200}},
			"/ok":    statuses(200),
			"/down":  statuses(503),
		})
		tr := newTransport(tel, base)
		for _, path := range []string{"/flaky", "/ok", "/down"} {
			req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://svc.test"+path, nil)
			require.NoError(t, err)
			_, err = do(t, tr, req)
			require.NoError(t, err)
		}
		m := tel.metrics(t)
		host := []attribute.KeyValue{semconv.HTTPRequestMethodGet, semconv.ServerAddress("svc.test"), semconv.ServerPort(80)}
		with := func(kvs ...attribute.KeyValue) []attribute.KeyValue {
			return append(append([]attribute.KeyValue{}, host...), kvs...)
		}

		assert.EqualValues(t, 7, sum(t, m[otelretry.AttemptsName], host...), "attempts")
		assert.Equal(t, "{attempt}", m[otelretry.AttemptsName].Unit)

		retries := m[otelretry.RetriesName]
		assert.Equal(t, "{retry}", retries.Unit)
		assert.EqualValues(t, 4, sum(t, retries), "retries")
		noFacets := with(otelretry.ThrottleKey.Bool(false), otelretry.TimeoutKey.Bool(false))
		assert.EqualValues(t, 3, sum(t, retries, append(noFacets, semconv.ErrorTypeKey.String("503"))...), "retries after a 503")
		assert.EqualValues(t, 1, sum(t, retries, append(noFacets, semconv.ErrorType(refused))...), "retries after a refused dial")

		giveUps := m[otelretry.GiveUpsName]
		assert.Equal(t, "{give_up}", giveUps.Unit)
		assert.EqualValues(t, 1, sum(t, giveUps, with(otelretry.ReasonKey.String("attempts_exhausted"), semconv.ErrorTypeKey.String("503"))...))

		delay := m[otelretry.RetryDelayName]
		assert.Equal(t, "s", delay.Unit)
		hist, ok := delay.Data.(metricdata.Histogram[float64])
		require.True(t, ok)
		require.Len(t, hist.DataPoints, 1)
		assert.EqualValues(t, 4, hist.DataPoints[0].Count)
		assert.InDelta(t, 0.4, hist.DataPoints[0].Sum, 1e-9)
		assert.True(t, hist.DataPoints[0].Attributes.Equals(ptr(attribute.NewSet(with(otelretry.ThrottleKey.Bool(false))...))))

		// The default per-host budget: 4 retries at 5 tokens; the retry that
		// succeeded refunds its 5, the first-attempt success 1: 486 of 500.
		balance := m[otelretry.BalanceName]
		assert.Equal(t, "{token}", balance.Unit)
		gauge, ok := balance.Data.(metricdata.Gauge[float64])
		require.True(t, ok)
		require.Len(t, gauge.DataPoints, 1)
		assert.Equal(t, 486.0, gauge.DataPoints[0].Value)
		assert.True(t, gauge.DataPoints[0].Attributes.Equals(ptr(attribute.NewSet(
			semconv.URLScheme("http"), semconv.ServerAddress("svc.test"), semconv.ServerPort(80)))))
		assert.Equal(t, 486*budget.Token, tr.Budget().(*budget.PerHost).Balance(mustURL(t, "http://svc.test/")))
	})
}

func TestBalancePerHost(t *testing.T) {
	// One point per host with a bucket, the port given even when it is the
	// scheme's default, and nothing for a host that never retried.
	synctest.Test(t, func(t *testing.T) {
		tel := newTelemetry(t)
		base := newScript(map[string][]step{
			"a.test/":      statuses(503, 200),
			"b.test:8080/": statuses(503, 200),
			"c.test/":      statuses(200),
		})
		tr := newTransport(tel, base)
		for _, u := range []string{"https://a.test/", "http://b.test:8080/", "http://c.test/"} {
			req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, u, nil)
			require.NoError(t, err)
			_, err = do(t, tr, req)
			require.NoError(t, err)
		}
		gauge := tel.metrics(t)[otelretry.BalanceName].Data.(metricdata.Gauge[float64])
		got := map[string]float64{}
		for _, p := range gauge.DataPoints {
			scheme, _ := p.Attributes.Value(semconv.URLSchemeKey)
			host, _ := p.Attributes.Value(semconv.ServerAddressKey)
			port, _ := p.Attributes.Value(semconv.ServerPortKey)
			got[scheme.AsString()+" "+host.AsString()+" "+port.String()] = p.Value
		}
		assert.Equal(t, map[string]float64{"https a.test 443": 500, "http b.test 8080": 500}, got)
	})
}

func TestBalanceOfBucket(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tel := newTelemetry(t)
		bucket := budget.NewBucket(budget.Capacity(20))
		tr := newTransport(tel, newScript(map[string][]step{"/": statuses(503)}), retryhttp.WithBudget(bucket))
		_, err := do(t, tr, newRequest(t, t.Context(), "", ""))
		require.NoError(t, err)
		gauge := tel.metrics(t)[otelretry.BalanceName].Data.(metricdata.Gauge[float64])
		require.Len(t, gauge.DataPoints, 1)
		assert.Equal(t, 10.0, gauge.DataPoints[0].Value, "two retries at 5 tokens")
		assert.Zero(t, gauge.DataPoints[0].Attributes.Len())
	})
}

func TestNoBalanceBeforeFirstRequest(t *testing.T) {
	tel := newTelemetry(t)
	newTransport(tel, newScript(nil))
	_, ok := tel.metrics(t)[otelretry.BalanceName]
	assert.False(t, ok)
}

func TestReasonValues(t *testing.T) {
	reasons := map[retryhttp.GiveUpReason]string{
		retryhttp.GiveUpAttemptsExhausted:   "attempts_exhausted",
		retryhttp.GiveUpBudgetExhausted:     "budget_exhausted",
		retryhttp.GiveUpNotResendable:       "not_resendable",
		retryhttp.GiveUpBodyNotReplayable:   "body_not_replayable",
		retryhttp.GiveUpRetryAfterLimit:     "retry_after_limit",
		retryhttp.GiveUpRateLimitResetLimit: "rate_limit_reset_limit",
		retryhttp.GiveUpDeadline:            "deadline",
		retryhttp.GiveUpCanceled:            "canceled",
		retryhttp.GiveUpThrottled:           "throttled",
		retryhttp.GiveUpNotResumable:        "not_resumable",
		retryhttp.GiveUpResumeLimit:         "resume_limit",
		retryhttp.GiveUpMisdirected:         "misdirected",
		retryhttp.GiveUpPaced:               "paced",
		"something new":                     "_OTHER",
	}
	for r, want := range reasons {
		assert.Equal(t, want, otelretry.ReasonValue(r), string(r))
	}
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	require.NoError(t, err)
	return u
}

func TestAttemptsPastTheCache(t *testing.T) {
	// Attempts to more destinations than the attribute cache holds are
	// still counted, each under its own destination.
	tel := newTelemetry(t)
	base := newScript(map[string][]step{"/": statuses(200)})
	tr := newTransport(tel, base)
	const hosts = 300
	for i := range hosts {
		req, err := http.NewRequest(http.MethodGet, "http://h"+strconv.Itoa(i)+".test/", nil)
		require.NoError(t, err)
		_, err = do(t, tr, req)
		require.NoError(t, err)
	}
	attempts := tel.metrics(t)[otelretry.AttemptsName]
	assert.EqualValues(t, hosts, sum(t, attempts))
	assert.Len(t, attempts.Data.(metricdata.Sum[int64]).DataPoints, hosts)
	assert.EqualValues(t, 1, sum(t, attempts, semconv.HTTPRequestMethodGet, semconv.ServerAddress("h299.test"), semconv.ServerPort(80)))
}

func TestConcurrentRequests(t *testing.T) {
	// Many goroutines through one Transport, to several hosts, while the
	// metrics are collected: counts add up, and -race finds no race.
	synctest.Test(t, func(t *testing.T) {
		tel := newTelemetry(t)
		base := newScript(map[string][]step{"/": statuses(503, 200)}) // the first attempt at each host fails
		tr := newTransport(tel, base)
		const workers, requests = 8, 20
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				for i := range requests {
					req, err := http.NewRequest(http.MethodGet, "http://h"+strconv.Itoa((w+i)%3)+".test/", nil)
					if err != nil {
						t.Error(err)
						return
					}
					if _, err := do(t, tr, req); err != nil {
						t.Error(err)
					}
					if i%5 == 0 {
						var rm metricdata.ResourceMetrics
						if err := tel.reader.Collect(t.Context(), &rm); err != nil {
							t.Error(err)
						}
					}
				}
			})
		}
		wg.Wait()
		m := tel.metrics(t)
		// The script's counter is per path, so only the very first attempt
		// of all fails: one retry in all.
		assert.EqualValues(t, workers*requests+1, sum(t, m[otelretry.AttemptsName]))
		assert.EqualValues(t, 1, sum(t, m[otelretry.RetriesName]))
	})
}

func TestThrottledCounterAndRejectionGauge(t *testing.T) {
	// A host failing every attempt: requests refused by adaptive throttling
	// are counted, retries it refused are not (they are give-ups with the
	// last attempt's status), and the gauge has the host's rejection
	// probability.
	synctest.Test(t, func(t *testing.T) {
		tel := newTelemetry(t)
		base := newScript(map[string][]step{"/": statuses(503)})
		tr := newTransport(tel, base, retryhttp.WithMaxAttempts(2),
			retryhttp.WithAdaptiveThrottling(throttle.MinRequests(1)))
		refusals := 0
		for range 50 {
			req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://svc.test/", nil)
			require.NoError(t, err)
			if _, err := do(t, tr, req); err != nil {
				require.ErrorIs(t, err, retryhttp.ErrThrottled)
				refusals++
			}
		}
		require.Positive(t, refusals)

		m := tel.metrics(t)
		host := []attribute.KeyValue{semconv.HTTPRequestMethodGet, semconv.ServerAddress("svc.test"), semconv.ServerPort(80)}
		assert.Equal(t, "{request}", m[otelretry.ThrottledName].Unit)
		assert.EqualValues(t, refusals, sum(t, m[otelretry.ThrottledName], host...), "refused requests")
		assert.EqualValues(t, refusals, sum(t, m[otelretry.GiveUpsName],
			append(host, otelretry.ReasonKey.String("throttled"), semconv.ErrorType(retryhttp.ErrThrottled))...))
		assert.Positive(t, sum(t, m[otelretry.GiveUpsName], append(host, otelretry.ReasonKey.String("throttled"), semconv.ErrorTypeKey.String("503"))...),
			"retries refused")

		gauge, ok := m[otelretry.RejectionName].Data.(metricdata.Gauge[float64])
		require.True(t, ok)
		require.Len(t, gauge.DataPoints, 1)
		var want float64
		for r := range tr.Rejections() {
			want = r.Probability
		}
		assert.Positive(t, want)
		assert.Equal(t, want, gauge.DataPoints[0].Value, "the host's rejection probability")
		assert.True(t, gauge.DataPoints[0].Attributes.Equals(ptr(attribute.NewSet(
			semconv.URLScheme("http"), semconv.ServerAddress("svc.test"), semconv.ServerPort(80)))))
	})
}

func TestPaceWaitAndPacedHosts(t *testing.T) {
	// A host that throttles with Retry-After: 5: the next request waits
	// 5 s for its turn, recorded in the pace wait histogram; the host is
	// counted as paced; a request whose turn is further off than allowed
	// is a give-up with reason paced.
	synctest.Test(t, func(t *testing.T) {
		tel := newTelemetry(t)
		base := newScript(map[string][]step{"/": {
			{status: 429, header: http.Header{"Retry-After": {"5"}}}, {status: 200},
			{status: 429, header: http.Header{"Retry-After": {"60"}}}, {status: 200},
		}})
		tr := newTransport(tel, base, retryhttp.WithMaxAttempts(1), retryhttp.WithPacing())
		for range 2 {
			req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://svc.test/", nil)
			require.NoError(t, err)
			_, err = do(t, tr, req)
			require.NoError(t, err)
		}
		m := tel.metrics(t)
		hist, ok := m[otelretry.PaceWaitName].Data.(metricdata.Histogram[float64])
		require.True(t, ok)
		require.Len(t, hist.DataPoints, 1)
		assert.EqualValues(t, 1, hist.DataPoints[0].Count)
		assert.InDelta(t, 5, hist.DataPoints[0].Sum, 0.01, "the wait, in seconds")
		gauge, ok := m[otelretry.PacedHostsName].Data.(metricdata.Gauge[int64])
		require.True(t, ok)
		require.Len(t, gauge.DataPoints, 1)
		assert.EqualValues(t, 1, gauge.DataPoints[0].Value)

		for range 2 { // a 429 holding for 60 s, then a request refused
			req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://svc.test/", nil)
			require.NoError(t, err)
			_, _ = do(t, tr, req)
		}
		m = tel.metrics(t)
		host := []attribute.KeyValue{semconv.HTTPRequestMethodGet, semconv.ServerAddress("svc.test"), semconv.ServerPort(80)}
		assert.EqualValues(t, 1, sum(t, m[otelretry.GiveUpsName], append(host, otelretry.ReasonKey.String("paced"), semconv.ErrorTypeKey.String("*pace.Error"))...))
	})
}
