package redisbudget_test

import (
	"testing"

	"github.com/retryhttp/retryhttp/internal/docscheck"
)

// TestDocs compiles the Go blocks of the repository's documentation that
// use go-redis and this module (marked module=redisbudget), which the root
// module's own docs test leaves to this one so as never to download them.
func TestDocs(t *testing.T) {
	docscheck.CheckModule(t, "..", "redisbudget", map[string]string{
		"context":     "context",
		"http":        "net/http",
		"time":        "time",
		"redis":       "github.com/redis/go-redis/v9",
		"retryhttp":   "github.com/retryhttp/retryhttp",
		"budget":      "github.com/retryhttp/retryhttp/budget",
		"backoff":     "github.com/retryhttp/retryhttp/backoff",
		"classify":    "github.com/retryhttp/retryhttp/classify",
		"awsretry":    "github.com/retryhttp/retryhttp/awsretry",
		"githubretry": "github.com/retryhttp/retryhttp/githubretry",
		"googleretry": "github.com/retryhttp/retryhttp/googleretry",
		"redisbudget": "github.com/retryhttp/retryhttp/redisbudget",
		"throttle":    "github.com/retryhttp/retryhttp/throttle",
		"pace":        "github.com/retryhttp/retryhttp/pace",
	})
}
