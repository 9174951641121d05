package scenario

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// An Outcome is what a caller got for one logical request.
type Outcome struct {
	OK      bool          // a 200 arrived
	Status  int           // the final status, 0 after an error
	Err     error         // the final error, if any
	Latency time.Duration // from sending to the body's end
	Done    time.Time     // when the caller had its answer
}

// Send sends one logical request through client, with id in IDHeader (and
// key, when not empty, in Idempotency-Key), reads the response body to its
// end and closes it. A body of nil sends none; otherwise body makes the
// request body, and getBody says whether the request has GetBody.
func Send(ctx context.Context, client *http.Client, method, url, id, key string, body func() io.Reader, getBody bool) Outcome {
	var rd io.Reader
	if body != nil {
		rd = body()
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return Outcome{Err: err, Done: time.Now()}
	}
	if !getBody {
		req.GetBody = nil
	}
	req.Header.Set(IDHeader, id)
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		now := time.Now()
		return Outcome{Err: err, Latency: now.Sub(start), Done: now}
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	now := time.Now()
	return Outcome{
		OK:      err == nil && resp.StatusCode == http.StatusOK,
		Status:  resp.StatusCode,
		Err:     err,
		Latency: now.Sub(start),
		Done:    now,
	}
}

// Drive makes n calls of do, at most concurrency at a time, passing each its
// index, and returns their outcomes in index order. It stops starting calls
// once ctx is done.
func Drive(ctx context.Context, n, concurrency int, do func(ctx context.Context, i int) Outcome) []Outcome {
	out := make([]Outcome, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(concurrency, n) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				out[i] = do(ctx, i)
			}
		})
	}
	wg.Wait()
	return out
}

// Stats summarises outcomes.
type Stats struct {
	N        int
	OK       int
	P50, P99 time.Duration
}

// Summarise computes Stats over outcomes.
func Summarise(outcomes []Outcome) Stats {
	s := Stats{N: len(outcomes)}
	lat := make([]time.Duration, 0, len(outcomes))
	for _, o := range outcomes {
		if o.OK {
			s.OK++
		}
		lat = append(lat, o.Latency)
	}
	slices.Sort(lat)
	s.P50, s.P99 = quantile(lat, 0.50), quantile(lat, 0.99)
	return s
}

// quantile returns the q-quantile of sorted, by the nearest-rank method.
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.999999) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// SuccessRate formats OK/N as a percentage.
func (s Stats) SuccessRate() string { return Percent(s.OK, s.N) }

// Percent formats a/b as a percentage with two decimals, or "–" when b is
// 0.
func Percent(a, b int) string {
	if b == 0 {
		return "–"
	}
	return strconv.FormatFloat(100*float64(a)/float64(b), 'f', 2, 64) + "%"
}

// Ratio formats a/b with two decimals.
func Ratio(a, b int64) string {
	if b == 0 {
		return "–"
	}
	return strconv.FormatFloat(float64(a)/float64(b), 'f', 2, 64)
}

// Millis formats d in milliseconds, with one decimal below 10 ms.
func Millis(d time.Duration) string {
	ms := float64(d) / float64(time.Millisecond)
	if ms < 10 {
		return strconv.FormatFloat(ms, 'f', 1, 64) + " ms"
	}
	return strconv.FormatFloat(ms, 'f', 0, 64) + " ms"
}

// A Table is one scenario's results, one row per library.
type Table struct {
	Title  string
	Note   string
	Header []string
	Rows   [][]string
}

// Add appends a row.
func (t *Table) Add(cells ...string) { t.Rows = append(t.Rows, cells) }

// Fprint writes t as a markdown section.
func (t *Table) Fprint(w io.Writer) {
	fmt.Fprintf(w, "### %s\n\n", t.Title)
	if t.Note != "" {
		fmt.Fprintf(w, "%s\n\n", t.Note)
	}
	row := func(cells []string) {
		fmt.Fprint(w, "|")
		for _, c := range cells {
			fmt.Fprintf(w, " %s |", c)
		}
		fmt.Fprintln(w)
	}
	row(t.Header)
	sep := make([]string, len(t.Header))
	for i := range sep {
		sep[i] = "---"
	}
	row(sep)
	for _, r := range t.Rows {
		row(r)
	}
	fmt.Fprintln(w)
}
