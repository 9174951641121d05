package layer

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestMark(t *testing.T) {
	MarkGaveUp(context.Background()) // no incoming request: nothing to mark
	MarkShed(context.Background())

	var s Serving
	ctx := NewContext(context.Background(), &s)
	MarkGaveUp(ctx)
	assert.True(t, s.GaveUp())
	assert.False(t, s.Shed())

	var shed Serving
	MarkShed(NewContext(context.Background(), &shed))
	assert.True(t, shed.GaveUp(), "a request shed is given up on")
	assert.True(t, shed.Shed())
}

func TestFailure(t *testing.T) {
	for code, want := range map[int]bool{200: false, 404: false, 408: true, 409: false, 429: true, 500: true, 503: true, 599: true, 600: false} {
		assert.Equal(t, want, Failure(code), "%d", code)
	}
}
