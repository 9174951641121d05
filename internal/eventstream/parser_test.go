package eventstream

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ev is an Event with its data as a string, for comparisons.
type ev struct {
	Type, Data, ID string
	End            int64
}

// parsed is what a Parser made of a whole stream.
type parsed struct {
	events   []ev
	steps    []Step  // each boundary, in order
	ends     []int64 // the offset of each
	lastID   string
	retry    time.Duration
	hasRetry bool
	err      error
}

// parseChunks parses the chunks of a stream, in order, with a Parser of
// lim, and checks, as it goes, that Next consumes what it says and that
// offsets only grow. Each chunk is given in a buffer that is overwritten
// once the parser is done with it, as a reader's would be.
func parseChunks(t testing.TB, lim Limits, discard bool, chunks ...[]byte) parsed {
	t.Helper()
	p := NewParser(lim)
	p.discardData = discard
	var got parsed
	var total, last int64
	var scratch []byte
	for _, c := range chunks {
		for i := range scratch {
			scratch[i] = '#'
		}
		scratch = append(scratch[:0], c...)
		c = scratch
		for {
			n, s, err := p.Next(c)
			if n < 0 || n > len(c) {
				t.Fatalf("Next consumed %d of %d bytes", n, len(c))
			}
			total += int64(n)
			if p.Offset() != total {
				t.Fatalf("Offset() = %d after consuming %d bytes", p.Offset(), total)
			}
			c = c[n:]
			if err != nil {
				got.err = err
				break
			}
			if s != More {
				if p.Offset() < last {
					t.Fatalf("boundary at %d before the last one, at %d", p.Offset(), last)
				}
				last = p.Offset()
				got.steps = append(got.steps, s)
				got.ends = append(got.ends, last)
			}
			if s == Dispatch {
				e := p.Event()
				if e.End != p.Offset() {
					t.Fatalf("event ends at %d, parser at %d", e.End, p.Offset())
				}
				got.events = append(got.events, ev{e.Type, string(e.Data), e.ID, e.End})
			}
			if s == More {
				if len(c) != 0 {
					t.Fatalf("Next returned More with %d bytes left", len(c))
				}
				break
			}
		}
		if got.err != nil {
			break
		}
	}
	got.lastID = p.LastID()
	got.retry, got.hasRetry = p.Retry()
	return got
}

// splits returns ways of cutting in: whole, a byte at a time, and at
// random points.
func splits(in string, seed uint64) map[string][][]byte {
	b := []byte(in)
	out := map[string][][]byte{"whole": {b}}
	var ones [][]byte
	for i := range b {
		ones = append(ones, b[i:i+1])
	}
	out["bytes"] = ones
	rng := rand.New(rand.NewPCG(seed, 1))
	var random [][]byte
	for rest := b; len(rest) > 0; {
		k := min(rng.IntN(7), len(rest))
		random = append(random, rest[:k])
		rest = rest[k:]
	}
	out["random"] = random
	return out
}

// parseCases are the parser's table, and the fuzz target's seeds.
var parseCases = []struct {
	name     string
	in       string
	lim      Limits
	want     []ev
	lastID   string
	retry    time.Duration // -1: no valid retry field
	tooLong  bool
	boundary int // blank lines and comments that dispatch nothing
}{
	{name: "empty", in: "", retry: -1},
	{name: "one event", in: "data: hello\n\n", want: []ev{{"message", "hello", "", 13}}, retry: -1},
	{name: "anthropic error", in: "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n",
		want: []ev{{"error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, "", 96}}, retry: -1},
	{name: "openai error", in: "data: {\"error\":{\"message\":\"busy\"}}\n\n", want: []ev{{"message", `{"error":{"message":"busy"}}`, "", 36}}, retry: -1},
	{name: "crlf", in: "data: a\r\n\r\ndata: b\r\n\r\n", want: []ev{{"message", "a", "", 10}, {"message", "b", "", 21}}, retry: -1},
	{name: "cr", in: "data: a\r\rdata: b\r\r", want: []ev{{"message", "a", "", 9}, {"message", "b", "", 18}}, retry: -1},
	{name: "mixed ends", in: "data: a\rdata: b\r\ndata: c\n\r\n", want: []ev{{"message", "a\nb\nc", "", 26}}, retry: -1},
	{name: "cr then lf is one end", in: "data: a\r\n\n", want: []ev{{"message", "a", "", 10}}, retry: -1},
	{name: "lf then cr is two", in: "data: a\n\rdata: b\n\n", want: []ev{{"message", "a", "", 9}, {"message", "b", "", 18}}, retry: -1},
	{name: "bom", in: "\xEF\xBB\xBFdata: x\n\n", want: []ev{{"message", "x", "", 12}}, retry: -1},
	{name: "second bom is a name", in: "\xEF\xBB\xBF\xEF\xBB\xBFdata: x\n\n", retry: -1, boundary: 1},
	{name: "broken bom is a name", in: "\xEF\xBBdata: x\n\ndata: y\n\n", want: []ev{{"message", "y", "", 20}}, retry: -1, boundary: 1},
	{name: "bom byte then end", in: "\xEF\ndata: y\n\n", want: []ev{{"message", "y", "", 11}}, retry: -1},
	{name: "bom later is a name", in: "data: x\n\n\xEF\xBB\xBFdata: y\n\n", want: []ev{{"message", "x", "", 9}}, retry: -1, boundary: 1},
	{name: "comments", in: ": hello\n:\ndata: a\n: between\ndata: b\n\n", want: []ev{{"message", "a\nb", "", 37}}, retry: -1, boundary: 2},
	{name: "comment ping", in: ": ping\n\n", retry: -1, boundary: 2},
	{name: "name without colon", in: "data\n\n", want: []ev{{"message", "", "", 6}}, retry: -1},
	{name: "empty value", in: "data:\n\n", want: []ev{{"message", "", "", 7}}, retry: -1},
	{name: "one space stripped", in: "data:  two\ndata:none\n\n", want: []ev{{"message", " two\nnone", "", 22}}, retry: -1},
	{name: "first colon splits", in: "data: a: b:c\n\n", want: []ev{{"message", "a: b:c", "", 14}}, retry: -1},
	{name: "multi-line data", in: "data: a\ndata: b\ndata:\n\n", want: []ev{{"message", "a\nb\n", "", 23}}, retry: -1},
	{name: "id", in: "id: 1\ndata: x\n\n", want: []ev{{"message", "x", "1", 15}}, lastID: "1", retry: -1},
	{name: "id persists", in: "id: 1\ndata: x\n\ndata: y\n\n", want: []ev{{"message", "x", "1", 15}, {"message", "y", "1", 24}}, lastID: "1", retry: -1},
	{name: "id reset", in: "id: 1\ndata: x\n\nid\ndata: y\n\n", want: []ev{{"message", "x", "1", 15}, {"message", "y", "", 27}}, retry: -1},
	{name: "id with nul ignored", in: "id: 1\ndata: x\n\nid: 2\x003\ndata: y\n\n", want: []ev{{"message", "x", "1", 15}, {"message", "y", "1", 32}}, lastID: "1", retry: -1},
	{name: "id without data counts", in: "id: 7\n\n", lastID: "7", retry: -1, boundary: 1},
	{name: "id before end does not", in: "id: 1\ndata: x\n\nid: 2\ndata: y\n", want: []ev{{"message", "x", "1", 15}}, lastID: "1", retry: -1},
	{name: "last id field wins", in: "id: 1\nid: 2\ndata: x\n\n", want: []ev{{"message", "x", "2", 21}}, lastID: "2", retry: -1},
	{name: "type reset", in: "event: a\ndata: 1\n\ndata: 2\n\n", want: []ev{{"a", "1", "", 18}, {"message", "2", "", 27}}, retry: -1},
	{name: "type without data reset", in: "event: a\n\ndata: 2\n\n", want: []ev{{"message", "2", "", 19}}, retry: -1, boundary: 1},
	{name: "type message", in: "event: message\ndata: 2\n\nevent:\ndata: 3\n\n", want: []ev{{"message", "2", "", 24}, {"message", "3", "", 40}}, retry: -1},
	{name: "last type wins", in: "event: a\nevent: b\ndata: 2\n\n", want: []ev{{"b", "2", "", 27}}, retry: -1},
	{name: "retry", in: "retry: 1500\n", retry: 1500 * time.Millisecond},
	{name: "retry zero", in: "retry: 1500\nretry: 0\n", retry: 0},
	{name: "retry not digits", in: "retry: 15x\nretry: -1\nretry: 1.5\nretry:  100\nretry:\nretry\n", retry: -1},
	{name: "retry kept after bad", in: "retry: 20\nretry: x\n", retry: 20 * time.Millisecond},
	{name: "retry huge", in: "retry: 99999999999999999999999\n", retry: math.MaxInt64},
	{name: "unknown field", in: "foo: bar\ndata: x\nDATA: y\n\n", want: []ev{{"message", "x", "", 26}}, retry: -1},
	{name: "names are case sensitive", in: "Data: x\n\n", retry: -1, boundary: 1},
	{name: "no blank line", in: "data: x\n", retry: -1},
	{name: "no line end", in: "data: x", retry: -1},
	{name: "blank lines", in: "\n\r\n\r\ndata: x\n\n", want: []ev{{"message", "x", "", 14}}, retry: -1, boundary: 3},
	{name: "line at limit", in: "data: 12\n\n", lim: Limits{Line: 8}, want: []ev{{"message", "12", "", 10}}, retry: -1},
	{name: "line over limit", in: "data: x\n\ndata: 123\n\n", lim: Limits{Line: 8}, want: []ev{{"message", "x", "", 9}}, retry: -1, tooLong: true},
	{name: "unended line over limit", in: "data: 123", lim: Limits{Line: 8}, retry: -1, tooLong: true},
	{name: "comment over limit", in: ": 12345678\n", lim: Limits{Line: 8}, retry: -1, tooLong: true},
	{name: "event at limit", in: "data: 1234\n\n", lim: Limits{Event: 12}, want: []ev{{"message", "1234", "", 12}}, retry: -1},
	{name: "event over limit", in: "data: 1\n\ndata: 12345\n\n", lim: Limits{Event: 12}, want: []ev{{"message", "1", "", 9}}, retry: -1, tooLong: true},
	{name: "lines over event limit", in: "data: 1\ndata: 2\n\n", lim: Limits{Event: 16}, retry: -1, tooLong: true},
	{name: "comments within event limit", in: ":a\n:b\n:c\n:d\n", lim: Limits{Event: 3}, retry: -1, boundary: 4},
	{name: "crlf counts in next", in: "data: 12\r\n\r\n", lim: Limits{Event: 11}, want: []ev{{"message", "12", "", 11}}, retry: -1},
	{name: "bom counts", in: "\xEF\xBB\xBFdata: 1\n\n", lim: Limits{Event: 10}, retry: -1, tooLong: true},
}

func TestParse(t *testing.T) {
	for _, tc := range parseCases {
		for how, chunks := range splits(tc.in, uint64(len(tc.in))) {
			t.Run(tc.name+"/"+how, func(t *testing.T) {
				got := parseChunks(t, tc.lim, false, chunks...)
				if tc.tooLong {
					require.ErrorIs(t, got.err, ErrTooLong)
				} else {
					require.NoError(t, got.err)
				}
				assert.Equal(t, tc.want, got.events, "events")
				assert.Equal(t, tc.lastID, got.lastID, "last event ID")
				if tc.retry < 0 {
					assert.False(t, got.hasRetry, "retry set to %v", got.retry)
				} else {
					assert.True(t, got.hasRetry, "retry")
					assert.Equal(t, tc.retry, got.retry, "retry")
				}
				boundaries := len(got.steps) - len(got.events)
				assert.Equal(t, tc.boundary, boundaries, "boundaries that dispatch nothing")
			})
		}
	}
}

// TestParseDiscardData: a Parser that does not keep data finds the same
// boundaries, ids and types.
func TestParseDiscardData(t *testing.T) {
	for _, tc := range parseCases {
		t.Run(tc.name, func(t *testing.T) {
			keep := parseChunks(t, tc.lim, false, []byte(tc.in))
			drop := parseChunks(t, tc.lim, true, splits(tc.in, 3)["random"]...)
			for i := range keep.events {
				keep.events[i].Data = ""
			}
			assert.Equal(t, keep.events, drop.events)
			assert.Equal(t, keep.steps, drop.steps)
			assert.Equal(t, keep.lastID, drop.lastID)
			assert.Equal(t, keep.err != nil, drop.err != nil)
		})
	}
}

func TestParseSteps(t *testing.T) {
	p := NewParser(Limits{})
	in := []byte(": hi\nid: 1\n\ndata: x\n\n:late\n")
	var got []Step
	var ends []int64
	for len(in) > 0 {
		n, s, err := p.Next(in)
		require.NoError(t, err)
		in = in[n:]
		got = append(got, s)
		ends = append(ends, p.Offset())
	}
	assert.Equal(t, []Step{Boundary, Boundary, Dispatch, Boundary}, got)
	assert.Equal(t, []int64{5, 12, 21, 27}, ends)
}

func TestParseErrorSticks(t *testing.T) {
	p := NewParser(Limits{Line: 4})
	_, _, err := p.Next([]byte("data: 12345\n\n"))
	require.ErrorIs(t, err, ErrTooLong)
	n, s, err2 := p.Next([]byte("data: 1\n\n"))
	assert.Equal(t, 0, n)
	assert.Equal(t, More, s)
	assert.Equal(t, err, err2)
}

// TestParseZeroParser: the zero Parser has the default limits.
func TestParseZeroParser(t *testing.T) {
	var p Parser
	line := "data: " + strings.Repeat("x", 200<<10) + "\n\n"
	n, s, err := p.Next([]byte(line))
	require.NoError(t, err)
	assert.Equal(t, len(line), n)
	assert.Equal(t, Dispatch, s)
	_, _, err = p.Next([]byte("data: " + strings.Repeat("x", 300<<10)))
	assert.ErrorIs(t, err, ErrTooLong)
}

// TestParseKeepsLittle: a line the parser needs no value of is not kept,
// however long; one it needs is kept whole.
func TestParseKeepsLittle(t *testing.T) {
	for _, in := range []string{": ", "foo: ", "data: "} {
		p := NewParser(Limits{Line: 1 << 20, Event: 1 << 20})
		p.discardData = true
		chunk := []byte(strings.Repeat("x", 1000))
		_, _, err := p.Next([]byte(in))
		require.NoError(t, err)
		for range 100 {
			_, _, err := p.Next(chunk)
			require.NoError(t, err)
		}
		assert.LessOrEqual(t, cap(p.line), 64, "%q: kept %d bytes", in, cap(p.line))
	}
}

// TestParseLongLineByteByByte: a long line given a byte at a time costs
// time in proportion to its length, not to its square.
func TestParseLongLineByteByByte(t *testing.T) {
	p := NewParser(Limits{Line: 2 << 20, Event: 2 << 20})
	line := []byte("event: " + strings.Repeat("x", 1<<20) + "\ndata\n\n")
	var s Step
	start := time.Now()
	for i := range line {
		_, s, _ = p.Next(line[i : i+1])
	}
	assert.Equal(t, Dispatch, s)
	assert.Len(t, p.Event().Type, 1<<20)
	assert.Less(t, time.Since(start), 10*time.Second, "quadratic in the line's length")
}
