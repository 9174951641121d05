package classify

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/retryhttp/retryhttp/internal/testkit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStatusClassifier(t *testing.T) {
	retry := Verdict{Decision: Retry}
	final := Verdict{Decision: DontRetry}
	tests := []struct {
		code   int
		header http.Header
		want   Verdict
	}{
		{200, nil, final},
		{201, nil, final},
		{304, nil, final},
		{400, nil, final},
		{401, nil, final},
		{404, nil, final},
		{409, nil, final},
		{422, nil, final},
		{425, nil, final},
		{425, http.Header{"Early-Data": {"1"}}, final},
		{408, nil, retry},
		{421, nil, Verdict{Decision: Retry, Misdirected: true}},
		{429, nil, Verdict{Decision: Retry, Throttle: true}},
		{500, nil, retry},
		{501, nil, final},
		{502, nil, retry},
		{503, nil, retry},
		{503, http.Header{"Retry-After": {"1"}}, Verdict{Decision: Retry, Throttle: true}},
		{504, nil, Verdict{Decision: Retry, Timeout: true}},
		{505, nil, final},
		{507, nil, retry},
		{511, nil, final},
		{599, nil, retry},
		{600, nil, final},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.code, tt.header), func(t *testing.T) {
			resp := &http.Response{StatusCode: tt.code, Header: tt.header}
			assert.Equal(t, tt.want, Status().Classify(testkit.Get(t, "http://x.test/"), resp, nil))
			assert.Equal(t, tt.want, Default().Classify(testkit.Get(t, "http://x.test/"), resp, nil))
		})
	}
}

func TestErrorClassifierDeadlineOfTheCaller(t *testing.T) {
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://x.test/", nil)
	require.NoError(t, err)
	final := Verdict{Decision: DontRetry}
	assert.Equal(t, final, Errors().Classify(req, nil, context.DeadlineExceeded))
	assert.Equal(t, final, Default().Classify(req, nil, &url.Error{Op: "Get", URL: "http://x.test/", Err: context.DeadlineExceeded}))
}

func TestContextClassifier(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	req := testkit.Get(t, "http://x.test/").WithContext(ctx)
	resp := &http.Response{StatusCode: 503}
	assert.Equal(t, Verdict{}, Context().Classify(req, resp, nil))
	cancel()
	assert.Equal(t, Verdict{Decision: DontRetry}, Context().Classify(req, resp, nil))
	assert.Equal(t, DontRetry, Default().Classify(req, resp, nil).Decision, "a cancelled caller's 503 is final")
}

func TestChainAndStatuses(t *testing.T) {
	c := First(Statuses(DontRetry, 500), Statuses(Retry, 404, 429, 421), Default())
	req := testkit.Get(t, "http://x.test/")
	for code, want := range map[int]Verdict{
		500: {Decision: DontRetry},
		404: {Decision: Retry},
		429: {Decision: Retry, Throttle: true},
		421: {Decision: Retry, Misdirected: true},
		502: {Decision: Retry},
		400: {Decision: DontRetry},
	} {
		assert.Equal(t, want, c.Classify(req, &http.Response{StatusCode: code}, nil), "status %d", code)
	}
	assert.Equal(t, Verdict{Decision: DontRetry}, First(Statuses(DontRetry, 421), Default()).Classify(req, &http.Response{StatusCode: 421}, nil),
		"a 421 made final carries no facet")
	assert.Equal(t, Verdict{Decision: DontRetry}, First().Classify(req, &http.Response{StatusCode: 503}, nil), "empty chain: final")
	fn := Func(func(*http.Request, *http.Response, error) Verdict { return Verdict{Decision: Retry} })
	assert.Equal(t, Retry, fn.Classify(req, nil, errors.New("x")).Decision)
	assert.Equal(t, "retry", Retry.String())
	assert.Equal(t, "don't retry", DontRetry.String())
	assert.Equal(t, "abstain", Abstain.String())
	assert.Equal(t, "Decision(9)", Decision(9).String())
}
