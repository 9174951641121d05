package scenario

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/retryhttp/retryhttp/bench/peers"
	"github.com/retryhttp/retryhttp/deadline"
	"github.com/retryhttp/retryhttp/server"
)

// DeadlineParams sizes the deadline scenario: a chain A -> B -> C -> D -> E
// on loopback, A with a deadline on its call to B, E failing or slow.
type DeadlineParams struct {
	Warm        int           // requests to A before those measured, not counted
	Requests    int           // requests to A measured
	Concurrency int           // requests to A in flight
	Deadline    time.Duration // A's deadline for its call to B
	Fail        time.Duration // E's work before it answers 503, when it fails
	Slow        time.Duration // E's work before it answers 200, when it is slow
	Config      peers.Config  // every layer's retries
	// Margin is what each service takes off the deadline it is sent, with
	// server.DeadlineMargin; 0 keeps its default.
	Margin time.Duration
}

// DefaultDeadlineParams returns 200 requests to A, 4 at a time, after 20
// of warm-up; a deadline of 100 ms at A; E failing after 40 ms or answering
// after 150 ms; three attempts in each layer, from 10 ms of backoff,
// without retry budgets, whose draining would hide what deadlines do.
func DefaultDeadlineParams() DeadlineParams {
	return DeadlineParams{
		Warm: 20, Requests: 200, Concurrency: 4,
		Deadline: 100 * time.Millisecond, Fail: 40 * time.Millisecond, Slow: 150 * time.Millisecond,
		Config: peers.Config{Attempts: 3, Base: 10 * time.Millisecond, Cap: 100 * time.Millisecond, NoBudget: true},
	}
}

// A ChainSetup is how each service of the chain calls the next and serves
// its callers.
type ChainSetup struct {
	Name    string
	Lib     peers.Library // every service's client
	Handler bool          // every service is wrapped in server.Handler
	// Deadline: every service reads the deadline its caller sends
	// (server.Deadline), which Lib must send.
	Deadline bool
}

// ChainSetups returns the chain with no retry library, with
// go-retryablehttp, with retryhttp and server.Handler, and with retryhttp
// and server.Handler carrying the deadline down the chain.
func ChainSetups() []ChainSetup {
	return []ChainSetup{
		{Name: "plain net/http, no retries", Lib: peers.Library{Name: peers.Plain, New: peers.NewPlain}},
		{Name: "go-retryablehttp", Lib: peers.Library{Name: peers.RetryableHTTP, New: peers.NewRetryableHTTP}},
		{Name: "retryhttp + Handler", Lib: peers.Library{Name: peers.RetryHTTP, New: peers.NewRetryHTTP}, Handler: true},
		{Name: "retryhttp + Handler, deadline propagated", Lib: peers.Library{Name: peers.RetryHTTPDeadline, New: peers.NewRetryHTTPDeadline},
			Handler: true, Deadline: true},
	}
}

// An EndBehaviour is what E, the last service, does with each attempt.
type EndBehaviour struct {
	Name   string
	Work   time.Duration // before it answers, unless its request's context ends first
	Status int           // its answer after Work
	// Stubborn: the work goes on to its end when the request's context
	// ends, as in a handler that does not watch its context, or a service
	// that does not see its caller leave.
	Stubborn bool
}

// EndBehaviours returns E failing after p.Fail, answering after p.Slow,
// and failing after p.Fail without stopping when its caller leaves.
func EndBehaviours(p DeadlineParams) []EndBehaviour {
	return []EndBehaviour{
		{Name: fmt.Sprintf("E fails after %v of work", p.Fail), Work: p.Fail, Status: http.StatusServiceUnavailable},
		{Name: fmt.Sprintf("E answers after %v", p.Slow), Work: p.Slow, Status: http.StatusOK},
		{Name: fmt.Sprintf("E fails after %v of work that goes on when its caller leaves", p.Fail), Work: p.Fail,
			Status: http.StatusServiceUnavailable, Stubborn: true},
	}
}

// DeadlineResult is what the services of a chain saw of the requests to A
// measured.
type DeadlineResult struct {
	Requests int
	// EAttempts is the attempts that reached E's handler.
	EAttempts int
	// LateAtE is the attempts that reached E's handler after A stopped
	// waiting for B: when A's call to B returned, with an answer or cut
	// off by A's deadline.
	LateAtE int
	// LateWork is the time the handlers of B, C, D and E spent on the
	// requests after A stopped waiting for them.
	LateWork time.Duration
	// Doomed is the retries started in B..E (by A, B, C or D) that could
	// not finish: their handler's context ended before it did, or it ended
	// after A stopped waiting.
	Doomed int
	// Conns is the new connections B, C, D and E accepted.
	Conns int64
	// InTime is the requests for which A's call to B had an answer before
	// A's deadline, rather than being cut off by it.
	InTime int
}

// handlerRun is one run of a service's handler.
type handlerRun struct {
	start, end time.Time
	cut        bool // the handler's context ended before the handler
}

// A chainLayer is one service of the chain on loopback. It records every
// run of its handler, by request identity, and counts new connections.
type chainLayer struct {
	URL   string
	srv   *httptest.Server
	conns atomic.Int64
	mu    sync.Mutex
	runs  map[string][]*handlerRun
}

type runKey struct{}

// newChainLayer starts a service serving h, wrapped in server.Handler
// as s says, with margin if not 0, on 127.0.0.1.
func newChainLayer(s ChainSetup, margin time.Duration, h http.Handler) *chainLayer {
	l := &chainLayer{runs: map[string][]*handlerRun{}}
	// The innermost handler sees the context the service gives it, with
	// the deadline server.Handler applied.
	var inner http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r)
		if run, ok := r.Context().Value(runKey{}).(*handlerRun); ok {
			run.cut = r.Context().Err() != nil
		}
	})
	if s.Handler {
		var opts []server.Option
		if s.Deadline {
			opts = append(opts, server.Deadline(deadline.GRPCTimeout))
			if margin > 0 {
				opts = append(opts, server.DeadlineMargin(margin))
			}
		}
		inner = server.Handler(inner, opts...)
	}
	l.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		run := &handlerRun{start: time.Now()}
		id := r.Header.Get(IDHeader)
		l.mu.Lock()
		l.runs[id] = append(l.runs[id], run)
		l.mu.Unlock()
		inner.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), runKey{}, run)))
		l.mu.Lock()
		run.end = time.Now()
		l.mu.Unlock()
	}))
	l.URL = startLoopback(l.srv, cleartext, &l.conns, nil)
	return l
}

// runsOf returns the runs of the handler for request id, in order of start.
func (l *chainLayer) runsOf(id string) []handlerRun {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []handlerRun
	for _, r := range l.runs[id] {
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b handlerRun) int { return a.start.Compare(b.start) })
	return out
}

// forward returns the handler of B, C or D, which relays to next through
// client.
func forward(client *http.Client, next string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { relay(client, next, w, r) })
}

// end returns E's handler: it works for e.Work and answers e.Status, or,
// unless e.Stubborn, stops when its request's context ends and answers
// 504, as a service that watches its context does.
func end(e EndBehaviour) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t := time.NewTimer(e.Work)
		defer t.Stop()
		done := r.Context().Done()
		if e.Stubborn {
			done = nil
		}
		select {
		case <-t.C:
			if e.Status == http.StatusOK {
				OK(w, r, 0)
				return
			}
			http.Error(w, http.StatusText(e.Status), e.Status)
		case <-done:
			http.Error(w, http.StatusText(http.StatusGatewayTimeout), http.StatusGatewayTimeout)
		}
	})
}

// RunDeadlineChain sends p.Warm and then p.Requests GETs to A, in a chain A
// -> B -> C -> D -> E where each service calls the next through its own
// client of s.Lib, A with a deadline of p.Deadline on its call to B, and E
// does as e says; it returns what the services saw of the requests
// measured.
func RunDeadlineChain(ctx context.Context, s ChainSetup, e EndBehaviour, p DeadlineParams) DeadlineResult {
	var clients []*http.Client
	newClient := func() *http.Client {
		c := &http.Client{Transport: s.Lib.New(peers.NewBase(), p.Config)}
		clients = append(clients, c)
		return c
	}
	layers := []*chainLayer{newChainLayer(s, p.Margin, end(e))} // E, then D, C, B
	for range 3 {
		layers = append([]*chainLayer{newChainLayer(s, p.Margin, forward(newClient(), layers[0].URL))}, layers...)
	}
	var mu sync.Mutex
	stopped := map[string]time.Time{} // when A's call to B returned
	inTime := map[string]bool{}
	aClient := newClient()
	a := newChainLayer(ChainSetup{}, 0, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), p.Deadline)
		defer cancel()
		id := r.Header.Get(IDHeader)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, layers[0].URL, nil)
		if err != nil {
			panic(err)
		}
		req.Header.Set(IDHeader, id)
		resp, err := aClient.Do(req)
		status := http.StatusGatewayTimeout
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			status = resp.StatusCode
		}
		mu.Lock()
		stopped[id], inTime[id] = time.Now(), err == nil
		mu.Unlock()
		if status != http.StatusOK {
			http.Error(w, http.StatusText(status), status)
			return
		}
		OK(w, r, 0)
	}))
	driver := &http.Client{Transport: peers.NewBase()}
	send := func(prefix string) func(ctx context.Context, i int) Outcome {
		return func(ctx context.Context, i int) Outcome {
			return Send(ctx, driver, http.MethodGet, a.URL, id(prefix, i), "", nil, false)
		}
	}
	Drive(ctx, p.Warm, p.Concurrency, send("w"))
	var connsBefore int64
	for _, l := range layers {
		connsBefore += l.conns.Load()
	}
	Drive(ctx, p.Requests, p.Concurrency, send("d"))
	// Closing each server waits for its handlers: those below A may still
	// be running when A has answered.
	a.srv.Close()
	for _, l := range layers {
		l.srv.Close()
	}
	for _, c := range append(clients, driver) {
		c.CloseIdleConnections()
	}

	r := DeadlineResult{Requests: p.Requests}
	for _, l := range layers {
		r.Conns += l.conns.Load()
	}
	r.Conns -= connsBefore
	for i := range p.Requests {
		rid := id("d", i)
		stop, ok := stopped[rid]
		if !ok {
			continue // not sent: the run's context ended
		}
		if inTime[rid] {
			r.InTime++
		}
		for li, l := range layers {
			for k, run := range l.runsOf(rid) {
				late := run.end.After(stop)
				if late {
					r.LateWork += run.end.Sub(maxTime(run.start, stop))
				}
				if k > 0 && (late || run.cut) {
					r.Doomed++
				}
				if li == len(layers)-1 {
					r.EAttempts++
					if run.start.After(stop) {
						r.LateAtE++
					}
				}
			}
		}
	}
	return r
}

// maxTime returns the later of a and b.
func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// Deadline runs the scenario in which A stops waiting and the layers
// below it go on, or do not.
func Deadline(ctx context.Context, p Params) []Table {
	dp := p.DeadlineChain
	var tables []Table
	for _, e := range EndBehaviours(dp) {
		t := Table{
			Title: fmt.Sprintf("deadline: A -> B -> C -> D -> E, A's deadline %v, %s", dp.Deadline, e.Name),
			Note: fmt.Sprintf("Each service is a loopback server with a client of its own (%d attempts, backoff from %v, no "+
				"retry budget), calling the next with its request's context, and, with retryhttp, wrapped in server.Handler. "+
				"A gives its call to B a deadline of %v. %d requests to A, %d at a time, after %d of warm-up. Per request to A: "+
				"E's calls; E's calls after A stopped waiting for B (its call returned, answered or cut off); the time "+
				"B, C, D and E spent on it after that; the retries started anywhere in B..E that could not finish "+
				"(cut off, or done after A stopped waiting); the new connections B..E accepted. Last, the requests "+
				"whose call from A had an answer before A's deadline.",
				dp.Config.Attempts, dp.Config.Base, dp.Deadline, dp.Requests, dp.Concurrency, dp.Warm),
			Header: []string{"chain", "E calls", "E calls after A stopped waiting", "B..E work after it",
				"retries that could not finish", "new connections B..E", "A answered in time"},
		}
		for _, s := range ChainSetups() {
			r := RunDeadlineChain(ctx, s, e, dp)
			n := int64(r.Requests)
			t.Add(s.Name, Ratio(int64(r.EAttempts), n), Ratio(int64(r.LateAtE), n),
				Millis(r.LateWork/time.Duration(max(r.Requests, 1))), Ratio(int64(r.Doomed), n),
				Ratio(r.Conns, n), Percent(r.InTime, r.Requests))
		}
		tables = append(tables, t)
	}
	return tables
}
