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
		"otelretry":   "github.com/retryhttp/retryhttp/otelretry",
	})
}
