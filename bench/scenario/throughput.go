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

// Throughput downloads a large body through a plain transport and through
// retryhttp, in pairs, p.DownloadRuns pairs, from a loopback server and
// from memory, and tabulates the rates. The response can be resumed (a
// strong ETag, Accept-Ranges, Content-Length), so retryhttp returns the
// body that would resume it, and the table shows what that costs a
// download that needs no resume: over loopback, and without the network
// to hide it.
func Throughput(ctx context.Context, p Params) []Table {
	srv := bench.NewBlobServer(p.Download)
	defer srv.Close()
	t := Table{
		Title: fmt.Sprintf("throughput: a %d MiB download", p.Download>>20),
		Note: fmt.Sprintf("A GET of %d MiB whose response retryhttp would resume (net/http's ServeContent, with a "+
			"strong ETag and Accept-Ranges), read to its end through a 32 KiB buffer: from a loopback server "+
			"over a warm connection, and from memory (bench.BlobStub, the same response without the network). "+
			"Through a plain transport and through retryhttp, one after the other, %d times; each library's "+
			"median rate and its slowest and fastest run, and retryhttp's rate as a share of plain's in the "+
			"same pair, the median over the pairs. Nothing fails: this is what retryhttp costs a download that "+
			"needs no rescue.", p.Download>>20, p.DownloadRuns),
		Header: []string{"from", "library", "MB/s (median)", "slowest – fastest", "of plain's, pair by pair (median)"},
	}
	libs := []peers.Library{{Name: peers.Plain, New: peers.NewPlain}, {Name: peers.RetryHTTP, New: peers.NewRetryHTTP}}
	for _, from := range []struct {
		name string
		base func() http.RoundTripper
		url  string
	}{
		{"loopback", func() http.RoundTripper { return peers.NewBase() }, srv.URL + "/blob.bin"},
		{"memory", func() http.RoundTripper { return bench.BlobStub{Size: p.Download} }, "http://blob.test/blob.bin"},
	} {
		rts := make([]http.RoundTripper, len(libs))
		for i, lib := range libs {
			base := from.base()
			if c, ok := base.(interface{ CloseIdleConnections() }); ok {
				defer c.CloseIdleConnections()
			}
			rts[i] = lib.New(base, p.Fast)
			warmUp(rts[i], from.url)
		}
		rates, ratios := downloadPairs(ctx, rts, from.url, p)
		for i, lib := range libs {
			share := "100%"
			if i == 1 {
				share = strconv.FormatFloat(100*median(ratios), 'f', 1, 64) + "%"
			}
			r := rates[i]
			t.Add(from.name, lib.Name, mbps(median(slices.Clone(r))), mbps(slices.Min(r))+" – "+mbps(slices.Max(r)), share)
		}
	}
	return []Table{t}
}

// downloadPairs downloads url through rts[0] and rts[1], one after the
// other, p.DownloadRuns times, and returns the rate of each download in
// MB/s, by transport, and the second's rate over the first's in each pair.
// A failed download's rate is 0.
func downloadPairs(ctx context.Context, rts []http.RoundTripper, url string, p Params) ([][]float64, []float64) {
	buf := make([]byte, 32<<10)
	download := func(rt http.RoundTripper) float64 {
		start := time.Now()
		n, err := bench.Download(rt, url, buf)
		if err != nil || n != p.Download {
			return 0
		}
		return float64(n) / 1e6 / time.Since(start).Seconds()
	}
	rates := make([][]float64, 2)
	var ratios []float64
	for run := 0; run < p.DownloadRuns && ctx.Err() == nil; run++ {
		var pair [2]float64
		// Every other pair starts with the second, so that a slow moment
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
	return rates, ratios
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
