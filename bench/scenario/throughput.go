package scenario

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/retryhttp/retryhttp/bench"
	"github.com/retryhttp/retryhttp/bench/peers"
)

// Throughput downloads a large body from a loopback server through a plain
// transport and through retryhttp, in pairs, p.DownloadRuns pairs, and
// tabulates the rates. The server's response can be resumed (a strong
// ETag, Accept-Ranges, Content-Length), so retryhttp returns the body that
// would resume it, and the table shows what that costs a download that
// needs no resume.
func Throughput(ctx context.Context, p Params) []Table {
	srv := bench.NewBlobServer(p.Download)
	defer srv.Close()
	url := srv.URL + "/blob.bin"
	libs := []peers.Library{{Name: peers.Plain, New: peers.NewPlain}, {Name: peers.RetryHTTP, New: peers.NewRetryHTTP}}
	rts := make([]http.RoundTripper, len(libs))
	for i, lib := range libs {
		base := peers.NewBase()
		defer base.CloseIdleConnections()
		rts[i] = lib.New(base, p.Fast)
		warmUp(rts[i], url)
	}
	buf := make([]byte, 32<<10)
	download := func(rt http.RoundTripper) float64 {
		start := time.Now()
		n, err := bench.Download(rt, url, buf)
		if err != nil || n != p.Download {
			return 0
		}
		return float64(n) / 1e6 / time.Since(start).Seconds()
	}
	rates := make([][]float64, len(libs)) // MB/s of each run, by library
	var ratios []float64                  // retryhttp's rate over plain's, in each pair
	for run := 0; run < p.DownloadRuns && ctx.Err() == nil; run++ {
		var pair [2]float64
		// Every other pair starts with retryhttp, so that a slow moment
		// of the machine falls on each in turn.
		for j := range 2 {
			i := (j + run) % 2
			pair[i] = download(rts[i])
			rates[i] = append(rates[i], pair[i])
		}
		if pair[0] > 0 {
			ratios = append(ratios, pair[1]/pair[0])
		}
	}
	t := Table{
		Title: fmt.Sprintf("throughput: a %d MiB download over loopback", p.Download>>20),
		Note: fmt.Sprintf("A GET of %d MiB from a loopback server (net/http's ServeContent, with a strong ETag and "+
			"Accept-Ranges: a body retryhttp would resume), read to its end through a 32 KiB buffer over a warm "+
			"connection, through a plain transport and through retryhttp, one after the other, %d times; each "+
			"library's median rate and its slowest and fastest run, and retryhttp's rate as a share of plain's "+
			"in the same pair, the median over the pairs. Nothing fails: this is what retryhttp costs a "+
			"download that needs no rescue.", p.Download>>20, p.DownloadRuns),
		Header: []string{"library", "MB/s (median)", "slowest – fastest", "of plain's, pair by pair (median)"},
	}
	for i, lib := range libs {
		r := slices.Clone(rates[i])
		share := "100%"
		if i == 1 {
			share = strconv.FormatFloat(100*median(ratios), 'f', 1, 64) + "%"
		}
		t.Add(lib.Name, mbps(median(r)), mbps(slices.Min(r))+" – "+mbps(slices.Max(r)), share)
	}
	return []Table{t}
}

// warmUp sends a HEAD of url through rt, so that the downloads that follow
// find a connection open.
func warmUp(rt http.RoundTripper, url string) {
	req, err := http.NewRequest(http.MethodHead, url, nil)
	if err != nil {
		return
	}
	if resp, err := rt.RoundTrip(req); err == nil {
		resp.Body.Close()
	}
}

func mbps(x float64) string { return strconv.FormatFloat(x, 'f', 0, 64) }

// median returns the median of xs, which it sorts.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	if len(xs)%2 == 1 {
		return xs[len(xs)/2]
	}
	return (xs[len(xs)/2-1] + xs[len(xs)/2]) / 2
}
