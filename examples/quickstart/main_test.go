package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestQuickstart(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(&out), out.String())
	assert.Contains(t, out.String(), `200 OK "order 42: 1 book, shipped" after 3 attempts`)
	assert.Contains(t, out.String(), "the service saw 2 attempts and created 1 order")
	assert.Contains(t, out.String(), ": hedging, attempt 2")
}
