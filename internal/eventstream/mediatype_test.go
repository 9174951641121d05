package eventstream

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestIsEventStream(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{"text/event-stream", true},
		{"Text/Event-Stream", true},
		{"TEXT/EVENT-STREAM", true},
		{"text/event-stream; charset=utf-8", true},
		{"text/event-stream;charset=utf-8", true},
		{" \ttext/event-stream \t", true},
		{"text/event-stream ; x", true},
		{"", false},
		{"text/event", false},
		{"text/event-streams", false},
		{"text/event-stream,text/plain", false},
		{"application/json", false},
		{"text/plain; x=text/event-stream", false},
		{"text/event-ſtream", false},
		{"x text/event-stream", false},
	} {
		t.Run(tc.in, func(t *testing.T) {
			assert.Equal(t, tc.want, IsEventStream(tc.in))
		})
	}
}

func TestIsEventStreamAllocates(t *testing.T) {
	s := "Text/Event-Stream; charset=utf-8"
	var yes bool
	got := testing.AllocsPerRun(100, func() { yes = IsEventStream(s) })
	assert.Zero(t, got)
	assert.True(t, yes)
}
