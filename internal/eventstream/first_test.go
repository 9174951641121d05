package eventstream

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// chunks is a reader that returns one chunk per Read (cut to the
// buffer's size, the rest kept for the next), then err, or io.EOF.
type chunks struct {
	parts [][]byte
	err   error
	reads int
}

func newChunks(err error, parts ...string) *chunks {
	c := &chunks{err: err}
	for _, p := range parts {
		c.parts = append(c.parts, []byte(p))
	}
	return c
}

func (c *chunks) Read(p []byte) (int, error) {
	c.reads++
	if len(c.parts) == 0 {
		if c.err != nil {
			return 0, c.err
		}
		return 0, io.EOF
	}
	n := copy(p, c.parts[0])
	if c.parts[0] = c.parts[0][n:]; len(c.parts[0]) == 0 {
		c.parts = c.parts[1:]
	}
	return n, nil
}

// rest returns what c has not yet returned.
func (c *chunks) rest() string {
	var b strings.Builder
	for _, p := range c.parts {
		b.Write(p)
	}
	return b.String()
}

var errCut = errors.New("connection reset")

func TestReadFirst(t *testing.T) {
	const anthropic = "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"
	for _, tc := range []struct {
		name    string
		parts   []string
		err     error // of the body after its parts
		lim     Limits
		want    *ev // nil: none
		raw     string
		rest    string // what the body still has
		wantErr error
	}{
		{
			name:  "data first",
			parts: []string{"data: {\"choices\":[]}\n\n", "data: [DONE]\n\n"},
			want:  &ev{"message", `{"choices":[]}`, "", 22},
			raw:   "data: {\"choices\":[]}\n\n",
			rest:  "data: [DONE]\n\n",
		},
		{
			name:  "anthropic error first",
			parts: []string{anthropic},
			want:  &ev{"error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, "", 96},
			raw:   anthropic,
		},
		{
			name:  "openai error first, split",
			parts: []string{"da", "ta: {\"error\":", "{\"message\":\"busy\"}}\n", "\nmore"},
			want:  &ev{"message", `{"error":{"message":"busy"}}`, "", 36},
			raw:   "data: {\"error\":{\"message\":\"busy\"}}\n\nmore",
		},
		{
			name:  "past comments, ids and the rest of the read",
			parts: []string{": ok\n\nid: 4\n\nevent: ping\ndata: {}\n\nevent: x\n", "data: 2\n\n"},
			want:  &ev{"ping", "{}", "4", 35},
			raw:   ": ok\n\nid: 4\n\nevent: ping\ndata: {}\n\nevent: x\n",
			rest:  "data: 2\n\n",
		},
		{
			name:    "no event before EOF",
			parts:   []string{": ok\n\n", "data: cut"},
			raw:     ": ok\n\ndata: cut",
			wantErr: io.EOF,
		},
		{
			name:    "read error",
			parts:   []string{"data: a\n"},
			err:     errCut,
			raw:     "data: a\n",
			wantErr: errCut,
		},
		{
			name:    "no event within the limit",
			parts:   []string{strings.Repeat(":\n", 40), "data: x\n\n"},
			lim:     Limits{Event: 64},
			raw:     strings.Repeat(":\n", 32) + ":",
			rest:    "\n" + strings.Repeat(":\n", 7) + "data: x\n\n",
			wantErr: ErrTooLong,
		},
		{
			name:    "line over its limit",
			parts:   []string{"data: " + strings.Repeat("x", 100) + "\n\n"},
			lim:     Limits{Line: 50},
			raw:     "data: " + strings.Repeat("x", 100) + "\n\n",
			wantErr: ErrTooLong,
		},
		{
			name:  "long first event",
			parts: []string{"data: " + strings.Repeat("x", 5000) + "\n\n", "data: 2\n\n"},
			want:  &ev{"message", strings.Repeat("x", 5000), "", 5008},
			raw:   "data: " + strings.Repeat("x", 5000) + "\n\n",
			rest:  "data: 2\n\n",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := newChunks(tc.err, tc.parts...)
			raw, got, ok, err := ReadFirst(body, tc.lim)
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
			} else {
				require.NoError(t, err)
			}
			assert.Equal(t, tc.raw, string(raw), "bytes read")
			assert.Equal(t, tc.rest, body.rest(), "bytes left in the body")
			if tc.want == nil {
				assert.False(t, ok, "found %+v", got)
				return
			}
			require.True(t, ok, "no event")
			assert.Equal(t, *tc.want, ev{got.Type, string(got.Data), got.ID, got.End})
		})
	}
}

// eofWith is a reader that returns its bytes and io.EOF in one Read.
type eofWith struct{ b []byte }

func (e *eofWith) Read(p []byte) (int, error) {
	n := copy(p, e.b)
	e.b = e.b[n:]
	if len(e.b) == 0 {
		return n, io.EOF
	}
	return n, nil
}

// TestReadFirstEventAndEOF: when the Read that completes the event also
// ends the body, both are reported.
func TestReadFirstEventAndEOF(t *testing.T) {
	raw, got, ok, err := ReadFirst(&eofWith{[]byte("data: 1\n\n")}, Limits{})
	assert.True(t, ok)
	assert.Equal(t, "1", string(got.Data))
	assert.ErrorIs(t, err, io.EOF)
	assert.Equal(t, "data: 1\n\n", string(raw))
}

// TestReadFirstPutsBack: the bytes returned followed by the rest of the
// body are the body, byte for byte, however it is split.
func TestReadFirstPutsBack(t *testing.T) {
	stream := "\xEF\xBB\xBF: hi\r\n\r\nid: 1\r\nevent: message_start\r\ndata: {\"a\":1}\r\n\r\ndata: 2\r\n\r\n"
	for how, parts := range splits(stream, 11) {
		t.Run(how, func(t *testing.T) {
			var strs []string
			for _, p := range parts {
				strs = append(strs, string(p))
			}
			body := newChunks(nil, strs...)
			raw, got, ok, err := ReadFirst(body, Limits{})
			require.NoError(t, err)
			require.True(t, ok)
			assert.Equal(t, "message_start", got.Type)
			assert.Equal(t, "1", got.ID)
			rest, err := io.ReadAll(body)
			require.NoError(t, err)
			assert.Equal(t, stream, string(raw)+string(rest))
		})
	}
}

func BenchmarkReadFirst(b *testing.B) {
	stream := []byte("data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n" +
		"data: [DONE]\n\n")
	r := bytes.NewReader(stream)
	b.ReportAllocs()
	for b.Loop() {
		r.Reset(stream)
		_, _, ok, err := ReadFirst(r, Limits{})
		if !ok || err != nil {
			b.Fatal(ok, err)
		}
	}
}
