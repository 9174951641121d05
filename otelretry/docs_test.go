package otelretry_test

import (
	"testing"

	"github.com/retryhttp/retryhttp/internal/docscheck"
)

// TestDocs compiles the Go blocks of the repository's documentation that
// use OpenTelemetry and this module (marked module=otelretry), which the
// root module's own docs test leaves to this one so as never to download
// them.
func TestDocs(t *testing.T) {
	docscheck.CheckModule(t, "..", "otelretry", map[string]string{
		"context":     "context",
		"http":        "net/http",
		"metric":      "go.opentelemetry.io/otel/metric",
		"propagation": "go.opentelemetry.io/otel/propagation",
		"trace":       "go.opentelemetry.io/otel/trace",
		"retryhttp":   "github.com/retryhttp/retryhttp",
		"budget":      "github.com/retryhttp/retryhttp/budget",
		"backoff":     "github.com/retryhttp/retryhttp/backoff",
		"classify":    "github.com/retryhttp/retryhttp/classify",
		"awsretry":    "github.com/retryhttp/retryhttp/awsretry",
		"githubretry": "github.com/retryhttp/retryhttp/githubretry",
		"googleretry": "github.com/retryhttp/retryhttp/googleretry",
		"otelretry":   "github.com/retryhttp/retryhttp/otelretry",
	})
}
