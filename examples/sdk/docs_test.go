package main

import (
	"testing"

	"github.com/retryhttp/retryhttp/internal/docscheck"
)

// TestDocs compiles the SDK recipes of the repository's documentation
// (marked module=examples/sdk) against the SDKs this module requires, which
// the root module's own docs test leaves to this one so as never to
// download them.
func TestDocs(t *testing.T) {
	docscheck.CheckModule(t, "../..", "examples/sdk", map[string]string{
		"context":         "context",
		"http":            "net/http",
		"anthropic":       "github.com/anthropics/anthropic-sdk-go",
		"anthropicoption": "github.com/anthropics/anthropic-sdk-go/option",
		"aws":             "github.com/aws/aws-sdk-go-v2/aws",
		"azblob":          "github.com/Azure/azure-sdk-for-go/sdk/storage/azblob",
		"azcore":          "github.com/Azure/azure-sdk-for-go/sdk/azcore",
		"blob":            "github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob",
		"dynamodb":        "github.com/aws/aws-sdk-go-v2/service/dynamodb",
		"github":          "github.com/google/go-github/v84/github",
		"openai":          "github.com/openai/openai-go",
		"option":          "github.com/openai/openai-go/option",
		"policy":          "github.com/Azure/azure-sdk-for-go/sdk/azcore/policy",
		"retryhttp":       "github.com/retryhttp/retryhttp",
		"budget":          "github.com/retryhttp/retryhttp/budget",
		"backoff":         "github.com/retryhttp/retryhttp/backoff",
		"classify":        "github.com/retryhttp/retryhttp/classify",
		"awsretry":        "github.com/retryhttp/retryhttp/awsretry",
		"githubretry":     "github.com/retryhttp/retryhttp/githubretry",
		"googleretry":     "github.com/retryhttp/retryhttp/googleretry",
		"s3":              "github.com/aws/aws-sdk-go-v2/service/s3",
		"stripe":          "github.com/stripe/stripe-go/v85",
		"types":           "github.com/aws/aws-sdk-go-v2/service/s3/types",
	})
}
