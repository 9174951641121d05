package eventstream

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// FuzzParse parses a stream whole, in the chunks cuts gives, and without
// keeping data, each with the default limits and with small ones taken
// from cuts, and checks that: nothing panics; each way finds the same
// events, boundaries, last event ID and retry as a line-by-line reading of
// the specification (reference), and the same limit errors; offsets grow
// and stay within the input; and no event passes its limit. Its seeds, in
// testdata/fuzz/FuzzParse, are the inputs of parseCases.
func FuzzParse(f *testing.F) {
	f.Fuzz(func(t *testing.T, in, cuts []byte) {
		small := Limits{Line: 1, Event: 1}
		if len(cuts) > 1 {
			small = Limits{Line: 1 + int(cuts[0])%40, Event: 1 + int(cuts[1])%120}
		}
		for _, lim := range []Limits{{}, small} {
			want := reference(in, lim)
			whole := parseChunks(t, lim, false, in)
			chunked := parseChunks(t, lim, false, chop(in, cuts)...)
			discard := parseChunks(t, lim, true, chop(in, cuts)...)
			samePrefix(t, "whole", want, whole)
			samePrefix(t, "chunked", want, chunked)
			for i := range want.events {
				want.events[i].Data = ""
			}
			samePrefix(t, "discarding data", want, discard)
			checkBounds(t, in, lim.resolved(), whole)
		}
	})
}

// samePrefix fails t unless got is want.
func samePrefix(t *testing.T, how string, want, got parsed) {
	t.Helper()
	require.Equal(t, want.err != nil, got.err != nil, "%s: error %v, want %v", how, got.err, want.err)
	if got.err != nil {
		require.ErrorIs(t, got.err, ErrTooLong, how)
	}
	require.Equal(t, want.events, got.events, "%s: events", how)
	require.Equal(t, want.steps, got.steps, "%s: boundaries", how)
	require.Equal(t, want.ends, got.ends, "%s: boundary offsets", how)
	require.Equal(t, want.lastID, got.lastID, "%s: last event ID", how)
	require.Equal(t, want.hasRetry, got.hasRetry, "%s: retry set", how)
	require.Equal(t, want.retry, got.retry, "%s: retry", how)
}

// checkBounds fails t if a boundary is out of order or outside in, or an
// event over its limit.
func checkBounds(t *testing.T, in []byte, lim Limits, got parsed) {
	t.Helper()
	var last int64
	for _, end := range got.ends {
		require.Greater(t, end, last, "boundaries in order")
		require.LessOrEqual(t, end, int64(len(in)), "boundary within the input")
		require.LessOrEqual(t, end-last, int64(lim.Event), "event within its limit")
		last = end
	}
	for _, e := range got.events {
		require.LessOrEqual(t, len(e.Data), lim.Event, "data within the event's limit")
	}
}

// chop cuts in into chunks of the sizes cuts gives, in turn: zero-length
// chunks included, and a byte when they would make no progress.
func chop(in, cuts []byte) [][]byte {
	if len(cuts) == 0 {
		return [][]byte{in}
	}
	var out [][]byte
	for i, zeros := 0, 0; len(in) > 0; i++ {
		k := int(cuts[i%len(cuts)]) % 20
		if k == 0 {
			if zeros++; zeros > len(cuts) {
				k = 1
			}
		} else {
			zeros = 0
		}
		k = min(k, len(in))
		out = append(out, in[:k])
		in = in[k:]
	}
	return out
}

// reference reads a whole stream as the specification does: the lines
// first, then each line's field, with strings and no concern for memory;
// and applies the limits as a Parser counts them (an event's bytes run
// from just after one boundary's line end, which is its CR when it is a
// CRLF, and include a byte order mark).
func reference(in []byte, lim Limits) parsed {
	lim = lim.resolved()
	var out parsed
	var dataBuf, typeBuf, idBuf string
	var pending bool
	seg, pos := 0, 0
	over := func() parsed {
		out.err = ErrTooLong
		return out
	}
	if len(in) < len(bom) && bytes.HasPrefix([]byte(bom), in) {
		if len(in) > lim.Event {
			return over()
		}
		return out
	}
	if bytes.HasPrefix(in, []byte(bom)) {
		pos, seg = len(bom), len(bom)
		if seg > lim.Event {
			return over()
		}
	}
	boundary := func(s Step) {
		out.steps = append(out.steps, s)
		out.ends = append(out.ends, int64(pos))
		seg, pending, dataBuf, typeBuf = 0, false, "", ""
	}
	cr := false
	for pos < len(in) {
		if cr {
			cr = false
			if in[pos] == '\n' {
				pos, seg = pos+1, seg+1
				if seg > lim.Event {
					return over()
				}
				continue
			}
		}
		end := pos
		for end < len(in) && in[end] != '\r' && in[end] != '\n' {
			end++
		}
		line := string(in[pos:end])
		if len(line) > lim.Line {
			return over()
		}
		if end == len(in) {
			if seg+len(line) > lim.Event {
				return over()
			}
			break
		}
		seg += len(line) + 1
		if seg > lim.Event {
			return over()
		}
		cr, pos = in[end] == '\r', end+1
		switch {
		case line == "":
			out.lastID = idBuf
			if dataBuf == "" {
				boundary(Boundary)
				continue
			}
			typ := typeBuf
			if typ == "" {
				typ = "message"
			}
			out.events = append(out.events, ev{typ, strings.TrimSuffix(dataBuf, "\n"), out.lastID, int64(pos)})
			boundary(Dispatch)
		case line[0] == ':':
			if !pending {
				boundary(Boundary)
			}
		default:
			pending = true
			name, value, found := strings.Cut(line, ":")
			if found {
				value = strings.TrimPrefix(value, " ")
			}
			switch name {
			case "event":
				typeBuf = value
			case "data":
				dataBuf += value + "\n"
			case "id":
				if !strings.Contains(value, "\x00") {
					idBuf = value
				}
			case "retry":
				if value != "" && strings.Trim(value, "0123456789") == "" {
					ms, err := strconv.ParseInt(value, 10, 64)
					out.hasRetry, out.retry = true, time.Duration(ms)*time.Millisecond
					if err != nil || ms > math.MaxInt64/int64(time.Millisecond) {
						out.retry = math.MaxInt64
					}
				}
			}
		}
	}
	return out
}

// TestFuzzParseSeeds: the fuzz target's seed corpus holds every input of
// the parser's table.
func TestFuzzParseSeeds(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "fuzz", "FuzzParse", "*"))
	require.NoError(t, err)
	seeds := map[string]bool{}
	for _, name := range files {
		b, err := os.ReadFile(name)
		require.NoError(t, err)
		lines := strings.Split(string(b), "\n")
		require.GreaterOrEqual(t, len(lines), 2, name)
		require.Equal(t, "go test fuzz v1", lines[0], name)
		in, ok := strings.CutPrefix(lines[1], "[]byte(")
		require.True(t, ok, "%s: %q", name, lines[1])
		s, err := strconv.Unquote(strings.TrimSuffix(in, ")"))
		require.NoError(t, err, name)
		seeds[s] = true
	}
	for _, tc := range parseCases {
		assert.True(t, seeds[tc.in], "no seed for %q", tc.name)
	}
}

// TestReference: the reference agrees with the table.
func TestReference(t *testing.T) {
	for _, tc := range parseCases {
		t.Run(tc.name, func(t *testing.T) {
			got := reference([]byte(tc.in), tc.lim)
			assert.Equal(t, tc.tooLong, errors.Is(got.err, ErrTooLong))
			assert.Equal(t, tc.want, got.events)
			assert.Equal(t, tc.lastID, got.lastID)
		})
	}
}
