package main

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-github/v84/github"
	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/classify"
	"github.com/retryhttp/retryhttp/githubretry"
	"github.com/retryhttp/retryhttp/retryhttptest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGitHub counts, for each way a go-github call can fail, the attempts
// that reached the fake and the attempts that ran its handler, checks the
// error go-github returns when the call fails, and that a rate-limited call
// waited as long as GitHub asked.
func TestGitHub(t *testing.T) {
	ghClassifier := retryhttp.WithClassifier(classify.First(githubretry.Classifier(), classify.Default()))
	tests := []struct {
		name       string
		classifier bool
		fault      func() retryhttptest.Fault // made when the test starts: a reset is a time
		attempts   int
		executions int
		wait       time.Duration    // the least the call took
		wantErr    func(error) bool // the kind of go-github's error; nil for success
	}{
		{name: "502", classifier: true, fault: func() retryhttptest.Fault { return retryhttptest.First(1, retryhttptest.Status(http.StatusBadGateway)) },
			attempts: 2, executions: 1},
		{name: "secondary rate limit", classifier: true, fault: func() retryhttptest.Fault { return retryhttptest.First(1, githubSecondaryRateLimit(1)) },
			attempts: 2, executions: 1, wait: time.Second},
		{name: "secondary rate limit, default chain only", fault: func() retryhttptest.Fault { return retryhttptest.First(1, githubSecondaryRateLimit(1)) },
			attempts: 1, executions: 0, wantErr: isErr[*github.AbuseRateLimitError]},
		{name: "secondary rate limit past the Retry-After limit", classifier: true,
			fault:    func() retryhttptest.Fault { return retryhttptest.First(1, githubSecondaryRateLimit(120)) },
			attempts: 1, executions: 0, wantErr: isErr[*github.AbuseRateLimitError]},
		{name: "primary rate limit, reset in a second", classifier: true,
			fault: func() retryhttptest.Fault {
				return retryhttptest.First(1, githubPrimaryRateLimit(time.Now().Add(time.Second)))
			},
			attempts: 2, executions: 1},
		{name: "primary rate limit, reset in an hour", classifier: true,
			fault: func() retryhttptest.Fault {
				return retryhttptest.First(1, githubPrimaryRateLimit(time.Now().Add(time.Hour)))
			},
			attempts: 1, executions: 0, wantErr: isErr[*github.RateLimitError]},
		{name: "forbidden", classifier: true, fault: func() retryhttptest.Fault {
			return retryhttptest.Respond(http.StatusForbidden, http.Header{"X-Ratelimit-Remaining": {"4999"}}, `{"message":"Must have admin rights to Repository."}`)
		}, attempts: 1, executions: 0, wantErr: isErr[*github.ErrorResponse]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := newFakeGitHub()
			srv := retryhttptest.NewServer(api, tt.fault())
			defer srv.Close()
			opts := fast
			if tt.classifier {
				opts = append([]retryhttp.Option{ghClassifier}, fast...)
			}
			tr := retryhttp.New(opts...)
			defer tr.CloseIdleConnections()

			start := time.Now()
			repo, _, err := newGitHubClient(srv.URL, &http.Client{Transport: tr}).Repositories.Get(t.Context(), "retryhttp", "retryhttp")
			took := time.Since(start)

			if tt.wantErr == nil {
				require.NoError(t, err)
				assert.Equal(t, "retryhttp/retryhttp", repo.GetFullName())
			} else {
				require.True(t, tt.wantErr(err), "got %T: %v", err, err)
			}
			rec := srv.Requests()[0]
			assert.Equal(t, tt.attempts, rec.Attempts, "attempts: %v", rec.Outcomes)
			assert.Equal(t, tt.executions, rec.Executions, "executions")
			assert.Equal(t, tt.executions, api.Served(), "repositories served")
			assert.GreaterOrEqual(t, took, tt.wait, "the call took")
			if tt.attempts == 1 {
				assert.Less(t, took, time.Second, "a call not retried returns at once")
			}
		})
	}
}

// isErr reports whether err is, or wraps, an error of type E.
func isErr[E error](err error) bool {
	var e E
	return errors.As(err, &e)
}
