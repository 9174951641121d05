package retryhttp

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/retryhttp/retryhttp/budget"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPerCallOverrides(t *testing.T) {
	tests := []struct {
		name     string
		method   string
		ctx      func(context.Context) context.Context
		opts     []Option
		attempts int
	}{
		{"POST is not resent", http.MethodPost, nil, nil, 1},
		{"POST marked resendable", http.MethodPost, Resendable, nil, 3},
		{"GET without retries", http.MethodGet, func(ctx context.Context) context.Context { return MaxAttempts(ctx, 1) }, nil, 1},
		{"GET with more attempts", http.MethodGet, func(ctx context.Context) context.Context { return MaxAttempts(ctx, 5) }, nil, 5},
		{"GET with fewer attempts", http.MethodGet, func(ctx context.Context) context.Context { return MaxAttempts(ctx, 2) }, nil, 2},
		{"attempts below 1 count as 1", http.MethodGet, func(ctx context.Context) context.Context { return MaxAttempts(ctx, -3) }, nil, 1},
		{"overrides add up", http.MethodPost, func(ctx context.Context) context.Context { return Resendable(MaxAttempts(ctx, 2)) }, nil, 2},
		{"the later override wins", http.MethodGet, func(ctx context.Context) context.Context { return MaxAttempts(MaxAttempts(ctx, 4), 1) }, nil, 1},
		{"per call beats the Transport", http.MethodGet, func(ctx context.Context) context.Context { return MaxAttempts(ctx, 1) }, []Option{WithMaxAttempts(5)}, 1},
		{"resendable keeps the attempt limit", http.MethodPost, Resendable, []Option{WithMaxAttempts(2)}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := t.Context()
				if tt.ctx != nil {
					ctx = tt.ctx(ctx)
				}
				base := &script{steps: statuses(503)}
				req, err := http.NewRequestWithContext(ctx, tt.method, "http://svc.test/", nil)
				require.NoError(t, err)
				resp, err := newTestTransport(base, 0, tt.opts...).RoundTrip(req)
				require.NoError(t, err)
				base.requireDiscardedClosed(t, resp)
				resp.Body.Close()
				assert.Equal(t, tt.attempts, base.count())
			})
		})
	}
}

func TestWithResendable(t *testing.T) {
	// A GraphQL-like API: queries may be resent, mutations not. The
	// predicate reads a header the client sets, never the body.
	query := func(r *http.Request) bool { return r.Header.Get("X-Operation") == "query" }
	tests := []struct {
		name     string
		op       string
		body     func() *plainReader
		attempts int
		bodies   []string
	}{
		{"query", "query", nil, 3, []string{`{"q":1}`, `{"q":1}`, `{"q":1}`}},
		{"mutation", "mutation", nil, 1, []string{`{"q":1}`}},
		{"query without GetBody is resent from its copy", "query", func() *plainReader { return &plainReader{strings.NewReader(`{"q":1}`)} }, 3, []string{`{"q":1}`, `{"q":1}`, `{"q":1}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				base := &script{steps: statuses(502)}
				var req *http.Request
				var err error
				if tt.body != nil {
					req, err = http.NewRequestWithContext(t.Context(), http.MethodPost, "http://svc.test/graphql", tt.body())
				} else {
					req, err = http.NewRequestWithContext(t.Context(), http.MethodPost, "http://svc.test/graphql", strings.NewReader(`{"q":1}`))
				}
				require.NoError(t, err)
				req.Header.Set("X-Operation", tt.op)
				resp, err := newTestTransport(base, 0, WithResendable(query)).RoundTrip(req)
				require.NoError(t, err)
				resp.Body.Close()
				assert.Equal(t, tt.attempts, base.count())
				assert.Equal(t, tt.bodies, base.bodies)
			})
		})
	}
	assert.Panics(t, func() { WithResendable(nil) })
}

func TestResendableStillNeedsBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := &script{steps: statuses(503)}
		bucket := budget.NewBucket(budget.Capacity(5), budget.TimeoutCost(5))
		req, err := http.NewRequestWithContext(Resendable(t.Context()), http.MethodPost, "http://svc.test/", nil)
		require.NoError(t, err)
		resp, err := newTestTransport(base, 0, WithBudget(bucket)).RoundTrip(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, 2, base.count(), "one retry paid for, then the budget is empty")
	})
}

func TestNoOverrideCostsNothing(t *testing.T) {
	tr := New(WithBase(newStub()), WithResendable(func(*http.Request) bool { return true }))
	req, err := http.NewRequest(http.MethodGet, "http://svc.test/", nil)
	require.NoError(t, err)
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := tr.RoundTrip(req); err != nil {
			t.Fatal(err)
		}
	})
	assert.Zero(t, allocs)
}
