package main

import (
	"bufio"
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// A series is one strategy's arrivals at the server, counted per bucket.
type series struct {
	name   string
	counts []int // counts[i] = arrivals in [i*bucket, (i+1)*bucket)
}

// bucketize counts arrival times, relative to start, into buckets of width
// bucket. Times before start go in bucket 0. It returns at least one bucket
// and panics if bucket is not positive.
func bucketize(start time.Time, arrivals []time.Time, bucket time.Duration) []int {
	if bucket <= 0 {
		panic("storm: bucket width must be positive")
	}
	counts := make([]int, 1)
	for _, t := range arrivals {
		i := int(max(t.Sub(start), 0) / bucket)
		if i >= len(counts) {
			counts = append(counts, make([]int, i+1-len(counts))...)
		}
		counts[i]++
	}
	return counts
}

// drawTerminal draws each series as a plain-text histogram with one
// horizontal bar per bucket. All series share one scale, on which the
// largest count is width characters wide, and one time range, which ends at
// the last bucket that is non-empty in any series.
func drawTerminal(w io.Writer, bucket time.Duration, width int, ss ...series) error {
	if width < 1 {
		return fmt.Errorf("storm: bar width %d, want at least 1", width)
	}
	n, peak := extent(ss)
	labelW := 0
	for i := range n {
		labelW = max(labelW, len(ms(time.Duration(i)*bucket))+len("ms"))
	}
	countW := len(strconv.Itoa(peak))

	// bufio.Writer keeps the first write error and Flush reports it.
	out := bufio.NewWriter(w)
	for k, s := range ss {
		if k > 0 {
			fmt.Fprintln(out)
		}
		fmt.Fprintln(out, s.name)
		for i := range n {
			c := at(s.counts, i)
			fmt.Fprintf(out, "  %*s |%-*s %*d\n",
				labelW, ms(time.Duration(i)*bucket)+"ms", width, bar(c, peak, width), countW, c)
		}
		fmt.Fprintf(out, "  peak %d per %s ms\n", peakOf(s.counts), ms(bucket))
	}
	return out.Flush()
}

// bar returns c scaled so that peak is width characters, rounded to the
// nearest character, but at least one character for any non-zero count.
func bar(c, peak, width int) string {
	if c <= 0 || peak <= 0 {
		return ""
	}
	return strings.Repeat("#", max(1, (2*c*width+peak)/(2*peak)))
}

// Layout of one SVG panel, in pixels.
const (
	svgWidth     = 720
	panelHeight  = 220
	marginLeft   = 64
	marginRight  = 20
	marginTop    = 30
	marginBottom = 46
	plotWidth    = svgWidth - marginLeft - marginRight
	plotHeight   = panelHeight - marginTop - marginBottom
)

// writeSVG writes a standalone SVG document with one bar chart per series,
// stacked vertically. All panels share the same x and y scales, chosen as
// for drawTerminal, so that bars of equal height mean equal counts.
func writeSVG(w io.Writer, bucket time.Duration, ss ...series) error {
	n, peak := extent(ss)
	yStep := niceStep(peak, 4)
	yMax := max(yStep, (peak+yStep-1)/yStep*yStep)
	xStep := niceStep(n, 6) // in buckets
	barW := float64(plotWidth) / float64(n)
	gap := 0.0
	if barW > 3 {
		gap = 1
	}
	y := func(v int) float64 { return marginTop + plotHeight - plotHeight*float64(v)/float64(yMax) }
	height := max(1, len(ss)) * panelHeight

	out := bufio.NewWriter(w)
	fmt.Fprintln(out, `<?xml version="1.0" encoding="UTF-8"?>`)
	fmt.Fprintf(out, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11" style="background:#fff">`+"\n",
		svgWidth, height, svgWidth, height)
	for k, s := range ss {
		fmt.Fprintf(out, `<g transform="translate(0,%d)">`+"\n", k*panelHeight)
		fmt.Fprintf(out, `<text x="%d" y="18" font-size="14" font-weight="bold">%s (peak %d)</text>`+"\n",
			marginLeft, escape(s.name), peakOf(s.counts))
		for v := 0; v <= yMax; v += yStep {
			fmt.Fprintf(out, `<line x1="%d" y1="%.2f" x2="%d" y2="%.2f" stroke="#ddd"/>`+"\n",
				marginLeft, y(v), marginLeft+plotWidth, y(v))
			fmt.Fprintf(out, `<text x="%d" y="%.2f" text-anchor="end" dominant-baseline="middle">%d</text>`+"\n",
				marginLeft-6, y(v), v)
		}
		for i := range n {
			if c := at(s.counts, i); c > 0 {
				fmt.Fprintf(out, `<rect x="%.2f" y="%.2f" width="%.2f" height="%.2f" fill="#4c72b0"/>`+"\n",
					marginLeft+barW*float64(i), y(c), barW-gap, y(0)-y(c))
			}
		}
		for i := 0; i <= n; i += xStep {
			x := marginLeft + barW*float64(i)
			fmt.Fprintf(out, `<line x1="%.2f" y1="%.2f" x2="%.2f" y2="%.2f" stroke="#000"/>`+"\n", x, y(0), x, y(0)+4)
			fmt.Fprintf(out, `<text x="%.2f" y="%.2f" text-anchor="middle">%s</text>`+"\n",
				x, y(0)+16, ms(time.Duration(i)*bucket))
		}
		fmt.Fprintf(out, `<line x1="%d" y1="%.2f" x2="%d" y2="%.2f" stroke="#000"/>`+"\n",
			marginLeft, y(0), marginLeft+plotWidth, y(0))
		fmt.Fprintf(out, `<line x1="%d" y1="%d" x2="%d" y2="%.2f" stroke="#000"/>`+"\n",
			marginLeft, marginTop, marginLeft, y(0))
		fmt.Fprintf(out, `<text x="%d" y="%d" text-anchor="middle">time since start (ms)</text>`+"\n",
			marginLeft+plotWidth/2, panelHeight-8)
		fmt.Fprintf(out, `<text transform="translate(16,%d) rotate(-90)" text-anchor="middle">arrivals per %s ms</text>`+"\n",
			marginTop+plotHeight/2, ms(bucket))
		fmt.Fprintln(out, "</g>")
	}
	fmt.Fprintln(out, "</svg>")
	return out.Flush()
}

// extent returns how many buckets to draw, up to the last non-empty bucket
// of any series but at least one, and the largest count in any bucket.
func extent(ss []series) (n, peak int) {
	n = 1
	for _, s := range ss {
		for i, c := range s.counts {
			if c > 0 {
				n = max(n, i+1)
			}
		}
		peak = max(peak, peakOf(s.counts))
	}
	return n, peak
}

// peakOf returns the largest count, or 0 if there are none.
func peakOf(counts []int) int {
	p := 0
	for _, c := range counts {
		p = max(p, c)
	}
	return p
}

// at returns counts[i], or 0 past the end of a shorter series.
func at(counts []int, i int) int {
	if i < len(counts) {
		return counts[i]
	}
	return 0
}

// niceStep returns the smallest step of the form 1, 2 or 5 × 10^k such that
// ticks steps cover v.
func niceStep(v, ticks int) int {
	for p := 1; ; p *= 10 {
		for _, m := range []int{1, 2, 5} {
			if m*p*ticks >= v {
				return m * p
			}
		}
	}
}

// ms formats d in milliseconds without a unit, e.g. "20" or "0.5".
func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', -1, 64)
}

// escape returns s escaped for use as XML character data.
func escape(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s)) // cannot fail: strings.Builder never returns an error
	return b.String()
}
