package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOneLayer checks the one-layer demonstration's table: the throttled
// provider gets one request per call once its host's budget is spent, and
// the others exactly one, their budgets untouched by its failures.
func TestOneLayer(t *testing.T) {
	var out strings.Builder
	require.NoError(t, runOneLayer(&out))
	for _, row := range []string{
		"| OpenAI (answers 429 to everything) | 1000 | 1000 | 1100 | 1.10 |",
		"| Anthropic | 1000 | 0 | 1000 | 1.00 |",
		"| S3 | 1000 | 0 | 1000 | 1.00 |",
		"| GitHub | 1000 | 0 | 1000 | 1.00 |",
	} {
		assert.Contains(t, out.String(), row)
	}
}
