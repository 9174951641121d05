package resume

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/retryhttp/retryhttp/internal/config"
)

func TestOptions(t *testing.T) {
	c := config.NewResume()
	assert.Equal(t, config.Resume{Limit: 10, StallTimeout: 10 * time.Second}, c, "the defaults the docs state")
	Limit(3)(&c)
	StallTimeout(0)(&c)
	assert.Equal(t, config.Resume{Limit: 3, StallTimeout: 0}, c)
}

func TestOptionsPanic(t *testing.T) {
	assert.PanicsWithValue(t, "resume: Limit: must be at least 1 (retryhttp.WithoutResume turns resumption off), got 0",
		func() { Limit(0) })
	assert.PanicsWithValue(t, "resume: StallTimeout: negative duration -1ns", func() { StallTimeout(-1) })
	assert.NotPanics(t, func() { StallTimeout(0) }, "0 turns stall detection off")
}
