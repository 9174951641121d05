package eventstream

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestLimitsDefaults(t *testing.T) {
	for _, tc := range []struct {
		in, want Limits
	}{
		{Limits{}, Limits{Line: 256 << 10, Event: 1 << 20}},
		{Limits{Line: -1, Event: -5}, Limits{Line: 256 << 10, Event: 1 << 20}},
		{Limits{Line: 10}, Limits{Line: 10, Event: 1 << 20}},
		{Limits{Event: 10}, Limits{Line: 256 << 10, Event: 10}},
	} {
		assert.Equal(t, tc.want, tc.in.resolved(), "%+v", tc.in)
	}
}
