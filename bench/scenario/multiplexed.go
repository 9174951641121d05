package scenario

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/retryhttp/retryhttp/bench/peers"
	"github.com/retryhttp/retryhttp/retryhttptest"
)

// MultiplexedParams sizes the multiplexed scenario.
type MultiplexedParams struct {
	Requests int   // GETs in flight together on one connection
	Body     int64 // the body each download reads, in the reset run
	Cut      int64 // bytes of it sent before its stream is reset
}

// DefaultMultiplexedParams returns 50 GETs, and downloads of 256 KiB reset
// after 64 KiB.
func DefaultMultiplexedParams() MultiplexedParams {
	return MultiplexedParams{Requests: 50, Body: 256 << 10, Cut: 64 << 10}
}

// A MultiplexedResult is what one library did with requests multiplexed
// on one warm HTTP/2 connection, each failing once.
type MultiplexedResult struct {
	Whole    int // requests whose caller read a 200 and its whole body
	NewConns int // connections opened beside the warm one
}

// multiplexedServer answers, over HTTP/2, a warm-up GET and then n GETs
// whose first attempts it holds until all n have arrived, so that they
// are in flight together on one connection. It answers each first attempt
// with a 503 or, with reset, with a body whose stream it resets after cut
// bytes; later attempts are answered whole (http.ServeContent, which
// answers a range request).
type multiplexedServer struct {
	*retryhttptest.Server
	body []byte

	mu      sync.Mutex
	seen    map[string]int
	arrived int
	all     chan struct{}
}

func newMultiplexedServer(mp MultiplexedParams, reset bool) *multiplexedServer {
	s := &multiplexedServer{seen: make(map[string]int), all: make(chan struct{})}
	s.body = make([]byte, mp.Body)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range s.body {
		s.body[i] = byte(r.Uint32())
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		attempt, ok := s.arrive(r, mp.Requests)
		switch {
		case !ok:
		case attempt == 1 && !reset:
			http.Error(w, http.StatusText(http.StatusServiceUnavailable), http.StatusServiceUnavailable)
		default:
			w.Header().Set("ETag", `"v1"`)
			http.ServeContent(w, r, "", time.Unix(1_700_000_000, 0), bytes.NewReader(s.body))
		}
	})
	fault := retryhttptest.Pass()
	if reset {
		fault = retryhttptest.Func(func(key string, attempt int) retryhttptest.Fault {
			if attempt == 1 && key != "warm" {
				return retryhttptest.ResetAfter(mp.Cut)
			}
			return retryhttptest.Pass()
		})
	}
	s.Server = retryhttptest.NewHTTP2Server(h, fault, retryhttptest.KeyHeader(IDHeader))
	return s
}

// arrive returns the number of the attempt r is, once the first attempts
// of all n requests have arrived (the warm-up passes at once); false when
// r's context ended first.
func (s *multiplexedServer) arrive(r *http.Request, n int) (int, bool) {
	id := r.Header.Get(IDHeader)
	if id == "warm" {
		return 2, true
	}
	s.mu.Lock()
	s.seen[id]++
	attempt := s.seen[id]
	if attempt == 1 {
		if s.arrived++; s.arrived == n {
			close(s.all)
		}
	}
	s.mu.Unlock()
	if attempt > 1 {
		return attempt, true
	}
	select {
	case <-s.all:
		return attempt, true
	case <-r.Context().Done():
		return attempt, false
	}
}

// RunMultiplexed sends a warm-up GET through lib, then mp.Requests GETs at
// once, which share the warm connection; each fails once: a 503 or, with
// reset, a stream reset after mp.Cut bytes of the body.
func RunMultiplexed(ctx context.Context, lib peers.Library, c peers.Config, mp MultiplexedParams, reset bool) MultiplexedResult {
	srv := newMultiplexedServer(mp, reset)
	defer srv.Close()
	base := peers.NewBase()
	base.TLSClientConfig = srv.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
	base.ForceAttemptHTTP2 = true
	defer base.CloseIdleConnections()
	rt := lib.New(base, c)
	get := func(id string) bool {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		if err != nil {
			return false
		}
		req.Header.Set(IDHeader, id)
		resp, err := rt.RoundTrip(req)
		if err != nil {
			return false
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		return err == nil && resp.StatusCode == http.StatusOK && bytes.Equal(got, srv.body)
	}
	get("warm")
	warm := srv.Connections()
	var r MultiplexedResult
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range mp.Requests {
		wg.Go(func() {
			if get("m" + strconv.Itoa(i)) {
				mu.Lock()
				r.Whole++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	r.NewConns = srv.Connections() - warm
	return r
}

// Multiplexed runs the scenario of requests multiplexed on one warm HTTP/2
// connection that each fail once, as 503s and as streams reset mid-body.
func Multiplexed(ctx context.Context, p Params) Table {
	mp := DefaultMultiplexedParams()
	t := Table{
		Title: "instances: requests multiplexed on one warm HTTP/2 connection, each failing once",
		Note: fmt.Sprintf("%d GETs in flight together on one warm HTTP/2 connection (TLS, loopback). First, each "+
			"first attempt is answered 503, and the retry 200; then each is a %d KiB download whose stream the "+
			"server resets after %d KiB, and any later request is answered whole (a range request too). Whole: "+
			"the caller read a 200 and every byte of its body; new connections: those opened beside the warm "+
			"one. Fast backoff; budgets as each library has them by default.", mp.Requests, mp.Body>>10, mp.Cut>>10),
		Header: []string{"library", "503 once: whole", "503 once: new connections", "reset once: whole", "reset once: new connections"},
	}
	for _, lib := range peers.All() {
		a := RunMultiplexed(ctx, lib, p.Fast, mp, false)
		b := RunMultiplexed(ctx, lib, p.Fast, mp, true)
		t.Add(lib.Name, strconv.Itoa(a.Whole), strconv.Itoa(a.NewConns), strconv.Itoa(b.Whole), strconv.Itoa(b.NewConns))
	}
	return t
}
