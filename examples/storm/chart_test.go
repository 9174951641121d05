package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBucketize(t *testing.T) {
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return start.Add(d) }
	const bucket = 20 * time.Millisecond

	tests := []struct {
		name     string
		arrivals []time.Time
		want     []int
	}{
		{"no arrivals", nil, []int{0}},
		{"at start", []time.Time{at(0)}, []int{1}},
		{"just before edge", []time.Time{at(bucket - time.Nanosecond)}, []int{1}},
		{"on edge", []time.Time{at(bucket)}, []int{0, 1}},
		{"before start", []time.Time{at(-time.Second), at(-time.Nanosecond)}, []int{2}},
		{"gap", []time.Time{at(5 * time.Millisecond), at(65 * time.Millisecond), at(61 * time.Millisecond)}, []int{1, 0, 0, 2}},
		{"unordered", []time.Time{at(45 * time.Millisecond), at(0), at(25 * time.Millisecond)}, []int{1, 1, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := bucketize(start, tt.arrivals, bucket)
			assert.Equal(t, tt.want, got)
		})
	}

	assert.Panics(t, func() { bucketize(start, nil, 0) })
}

func TestDrawTerminal(t *testing.T) {
	// b is longer than a, with a trailing empty bucket to drop; both share
	// the scale set by a's peak of 4.
	a := series{name: "naive", counts: []int{2, 4}}
	b := series{name: "jitter", counts: []int{1, 0, 3, 0, 0}}
	var buf bytes.Buffer
	require.NoError(t, drawTerminal(&buf, 20*time.Millisecond, 10, a, b))

	want := strings.Join([]string{
		"naive",
		"   0ms |#####      2",
		"  20ms |########## 4",
		"  40ms |           0",
		"  peak 4 per 20 ms",
		"",
		"jitter",
		"   0ms |###        1", // 2.5 characters rounds up
		"  20ms |           0",
		"  40ms |########   3", // 7.5 characters rounds up
		"  peak 3 per 20 ms",
		"",
	}, "\n")
	assert.Equal(t, want, buf.String())
}

func TestDrawTerminalEdgeCases(t *testing.T) {
	tests := []struct {
		name string
		ss   []series
		want string
	}{
		{
			// A count far below the peak still gets one character, and
			// sub-millisecond buckets get fractional labels.
			name: "small count visible",
			ss:   []series{{name: "s", counts: []int{1000, 1}}},
			want: "s\n    0ms |#### 1000\n  0.5ms |#       1\n  peak 1000 per 0.5 ms\n",
		},
		{
			name: "all empty",
			ss:   []series{{name: "s"}},
			want: "s\n  0ms |     0\n  peak 0 per 0.5 ms\n",
		},
		{name: "no series", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			require.NoError(t, drawTerminal(&buf, 500*time.Microsecond, 4, tt.ss...))
			assert.Equal(t, tt.want, buf.String())
		})
	}
}

func TestDrawTerminalErrors(t *testing.T) {
	s := series{name: "s", counts: []int{1}}
	assert.Error(t, drawTerminal(io.Discard, time.Millisecond, 0, s))

	errWrite := errors.New("write failed")
	err := drawTerminal(failWriter{errWrite}, time.Millisecond, 10, s)
	assert.ErrorIs(t, err, errWrite)
}

type failWriter struct{ err error }

func (w failWriter) Write([]byte) (int, error) { return 0, w.err }

// svgRect is a parsed <rect> element.
type svgRect struct{ height float64 }

// parseSVG decodes every token of doc, failing the test if it is not
// well-formed XML, and returns its rects and the text of its <text> elements.
func parseSVG(t *testing.T, doc []byte) (rects []svgRect, texts []string) {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(doc))
	var root string
	inText := false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		switch tok := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = tok.Name.Local
				assert.Equal(t, "http://www.w3.org/2000/svg", tok.Name.Space)
			}
			switch tok.Name.Local {
			case "rect":
				var r svgRect
				for _, a := range tok.Attr {
					if a.Name.Local == "height" {
						r.height, err = strconv.ParseFloat(a.Value, 64)
						require.NoError(t, err)
					}
				}
				rects = append(rects, r)
			case "text":
				inText = true
				texts = append(texts, "")
			}
		case xml.EndElement:
			inText = inText && tok.Name.Local != "text"
		case xml.CharData:
			if inText {
				texts[len(texts)-1] += string(tok)
			}
		}
	}
	assert.Equal(t, "svg", root)
	return rects, texts
}

func TestWriteSVG(t *testing.T) {
	ss := []series{
		{name: "naive retries, no jitter", counts: []int{0, 8, 0, 2}},
		{name: "a <&> b", counts: []int{1, 2, 4, 0, 2, 0, 0}},
	}
	var buf bytes.Buffer
	require.NoError(t, writeSVG(&buf, 20*time.Millisecond, ss...))
	rects, texts := parseSVG(t, buf.Bytes())

	// One rect per non-zero bucket, in order, with heights on one scale.
	var counts []int
	for _, s := range ss {
		for _, c := range s.counts {
			if c > 0 {
				counts = append(counts, c)
			}
		}
	}
	require.Len(t, rects, len(counts))
	perArrival := rects[0].height / float64(counts[0])
	for i, r := range rects {
		assert.InDelta(t, perArrival*float64(counts[i]), r.height, 0.02, "rect %d", i)
	}

	assert.Contains(t, texts, "naive retries, no jitter (peak 8)")
	assert.Contains(t, texts, "a <&> b (peak 4)")
	assert.Contains(t, texts, "arrivals per 20 ms")
	assert.Contains(t, buf.String(), "a &lt;&amp;&gt; b")
	assert.Contains(t, texts, "100") // an x tick at the end of bucket 4, in ms
	assert.NotContains(t, buf.String(), "<script")
	assert.NotContains(t, buf.String(), "href")
}

func TestWriteSVGEmpty(t *testing.T) {
	tests := []struct {
		name string
		ss   []series
	}{
		{"no series", nil},
		{"no arrivals", []series{{name: "s", counts: []int{0}}, {name: "t"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			require.NoError(t, writeSVG(&buf, 20*time.Millisecond, tt.ss...))
			rects, _ := parseSVG(t, buf.Bytes())
			assert.Empty(t, rects)
		})
	}
}

func TestWriteSVGWriteError(t *testing.T) {
	errWrite := errors.New("write failed")
	err := writeSVG(failWriter{errWrite}, time.Millisecond, series{name: "s", counts: []int{1}})
	assert.ErrorIs(t, err, errWrite)
}
