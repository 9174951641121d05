package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRun(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(&out))
	s := out.String()
	for _, want := range []string{
		"checkout GET /flaky  -> 200 after 3 attempt(s)",
		"http.request.resend_count=2",
		"event retryhttp.retry [retryhttp.attempt=1",
		"retryhttp.give_up.reason=attempts_exhausted",
		"retryhttp.give_up.reason=retry_after_limit",
		"retryhttp.give_up.reason=not_resendable",
		"retryhttp.budget.balance ({token})",
		`"Name": "retryhttp.retry"`,
		`"Name": "retryhttp.client.attempts"`,
	} {
		assert.Contains(t, s, want)
	}
}
