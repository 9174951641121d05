package scenario

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/retryhttp/retryhttp/redisbudget"

	"github.com/retryhttp/retryhttp/bench/peers"
)

// RateConfig is what every library of the rate runs is asked to do: 3
// attempts, a constant 50 ms before each retry, budgets as by default.
var RateConfig = peers.Config{Attempts: 3, Delay: 50 * time.Millisecond}

// linger is how long a trial's bubble runs on after its last request has
// ended, so that what outlives requests ends in it: the exchanges of a
// Transport that shares its counts stop a window (10 s) after its last
// request.
const linger = 11 * time.Second

// A RateRun is one trial of open-loop GETs at an even rate, each started
// at its time whatever the others are doing, to an in-memory host that is
// healthy for Healthy, answers 503 to every attempt for Down, then heals
// for After. It runs in virtual time, in a testing/synctest bubble, so a
// trial of minutes takes a moment; the root module's throttlerate_test.go
// measures retryhttp alone the same way.
type RateRun struct {
	Rate                 float64       // requests a second, the processes together
	Healthy, Down, After time.Duration // the three periods
	// FlapUp and FlapDown, if set, make the outage flap: up for FlapUp,
	// then down for FlapDown, in turn.
	FlapUp, FlapDown time.Duration
	// Processes is how many clients send the requests, in turn, each its
	// own Transport as a process of a fleet would have; 1 if 0.
	Processes int
	// MidOutage, if set, is called halfway through the outage, in the
	// bubble.
	MidOutage func()
}

// A RateResult is what one trial measured.
type RateResult struct {
	SentDown     int           // requests started during the outage
	ReachedDown  int           // attempts that reached the host while it was down
	RefusedAfter int           // requests started after healing that were refused
	LastRefusal  time.Duration // from healing to the start of the last refused request; -1 if none
	UpSent, UpOK int           // flapping: requests started while the host was up, and those that succeeded
	Errs         int           // errors that are not refusals
}

// Amplification is the attempts that reached the host during the outage
// per request started then.
func (r RateResult) Amplification() float64 {
	return float64(r.ReachedDown) / float64(max(r.SentDown, 1))
}

// Clients makes the clients of a trial in its bubble: n of them over
// base, and a function that releases what they hold, called in the bubble
// after the last request and the linger.
type Clients func(base http.RoundTripper, n int) ([]http.RoundTripper, func())

// Apart returns clients of lib with c that share nothing.
func Apart(lib peers.Library, c peers.Config) Clients {
	return func(base http.RoundTripper, n int) ([]http.RoundTripper, func()) {
		cls := make([]http.RoundTripper, n)
		for i := range cls {
			cls[i] = lib.New(base, c)
		}
		return cls, func() {}
	}
}

// SharedMemory returns retryhttp clients with adaptive throttling (and c)
// that share their counts through one MemStore.
func SharedMemory(c peers.Config) Clients {
	return func(base http.RoundTripper, n int) ([]http.RoundTripper, func()) {
		return Apart(peers.RetryHTTPShared("", NewMemStore()), c)(base, n)
	}
}

// SharedRedis returns retryhttp clients with adaptive throttling (and c)
// that share their counts through Redis at addr: each has a go-redis
// client of its own, as a process would, and a redisbudget.ThrottleStore
// named name. The go-redis clients are closed on release.
func SharedRedis(addr, name string, c peers.Config) Clients {
	return func(base http.RoundTripper, n int) ([]http.RoundTripper, func()) {
		cls := make([]http.RoundTripper, n)
		rdbs := make([]*redis.Client, n)
		for i := range cls {
			rdbs[i] = redis.NewClient(&redis.Options{Addr: addr})
			cls[i] = peers.RetryHTTPShared("", redisbudget.NewThrottleStore(rdbs[i], name)).New(base, c)
		}
		return cls, func() {
			for _, r := range rdbs {
				r.Close()
			}
		}
	}
}

// Run runs the trial in a synctest bubble of t, from clients over a host
// in memory, each request in a goroutine of its own.
func (rr RateRun) Run(t *testing.T, clients Clients) RateResult {
	var res RateResult
	synctest.Test(t, func(*testing.T) {
		start := time.Now()
		heal := start.Add(rr.Healthy + rr.Down)
		up := func(at time.Time) bool {
			d := at.Sub(start)
			if d < rr.Healthy || !at.Before(heal) {
				return true
			}
			if rr.FlapUp > 0 {
				return (d-rr.Healthy)%(rr.FlapUp+rr.FlapDown) < rr.FlapUp
			}
			return false
		}
		var reachedDown atomic.Int64
		host := hostFunc(func(r *http.Request) (*http.Response, error) {
			code := http.StatusOK
			if !up(time.Now()) {
				code = http.StatusServiceUnavailable
				reachedDown.Add(1)
			}
			return &http.Response{StatusCode: code, Header: http.Header{}, Body: http.NoBody, Request: r}, nil
		})
		n := max(rr.Processes, 1)
		cls, release := clients(host, n)
		var mu sync.Mutex
		var wg sync.WaitGroup
		res.LastRefusal = -1
		total := int((rr.Healthy + rr.Down + rr.After).Seconds() * rr.Rate)
		gap := time.Duration(float64(time.Second) / rr.Rate)
		mid, midOutage := start.Add(rr.Healthy+rr.Down/2), rr.MidOutage
		for i := range total {
			at := start.Add(time.Duration(i) * gap)
			time.Sleep(time.Until(at))
			if midOutage != nil && !at.Before(mid) {
				midOutage()
				midOutage = nil
			}
			cl := cls[i%n]
			wg.Go(func() {
				ok, err := get(cl)
				mu.Lock()
				defer mu.Unlock()
				refused := peers.Refused(err)
				if err != nil && !refused {
					res.Errs++
				}
				switch {
				case !at.Before(heal):
					if refused {
						res.RefusedAfter++
						res.LastRefusal = max(res.LastRefusal, at.Sub(heal))
					}
				case !at.Before(start.Add(rr.Healthy)):
					res.SentDown++
					if rr.FlapUp > 0 && up(at) {
						res.UpSent++
						if ok {
							res.UpOK++
						}
					}
				}
			})
		}
		wg.Wait()
		time.Sleep(linger)
		synctest.Wait()
		release()
		// What the release stops may still be asleep: go-redis redials a
		// Redis that is down once a second until its client is closed.
		time.Sleep(2 * time.Second)
		res.ReachedDown = int(reachedDown.Load())
	})
	return res
}

// get sends a GET through cl and reports whether it got a 200.
func get(cl http.RoundTripper) (bool, error) {
	req, err := http.NewRequest(http.MethodGet, "http://svc.test/", nil)
	if err != nil {
		return false, err
	}
	resp, err := cl.RoundTrip(req)
	if err != nil {
		return false, err
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK, nil
}

// hostFunc is a host in memory: an http.RoundTripper that calls itself.
type hostFunc func(*http.Request) (*http.Response, error)

func (f hostFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Trials are the results of the trials of one library in one run.
type Trials []RateResult

// Within returns how many trials refused no request started d or more
// after healing.
func (ts Trials) Within(d time.Duration) int {
	n := 0
	for _, r := range ts {
		if r.LastRefusal < d {
			n++
		}
	}
	return n
}

// Amplifications returns the trials' amplifications, sorted.
func (ts Trials) Amplifications() []float64 {
	a := make([]float64, len(ts))
	for i, r := range ts {
		a[i] = r.Amplification()
	}
	slices.Sort(a)
	return a
}

// Errs returns the errors that were not refusals, over the trials.
func (ts Trials) Errs() int {
	n := 0
	for _, r := range ts {
		n += r.Errs
	}
	return n
}

// cells returns the trials' amplification (median [min-max]), refusals
// after healing (median [min-max]), last refusal (median [max], a trial
// without one counting as 0) and how many of them came within d, as
// "k of n".
func (ts Trials) cells(d time.Duration) []string {
	amps := ts.Amplifications()
	refused := make([]int, len(ts))
	last := make([]time.Duration, len(ts))
	for i, r := range ts {
		refused[i], last[i] = r.RefusedAfter, max(r.LastRefusal, 0)
	}
	slices.Sort(refused)
	slices.Sort(last)
	m := len(ts) / 2
	lastCell := "none"
	if slices.ContainsFunc(ts, func(r RateResult) bool { return r.LastRefusal >= 0 }) {
		lastCell = fmt.Sprintf("%s [%s]", seconds(last[m]), seconds(last[len(last)-1]))
	}
	return []string{
		fmt.Sprintf("%.2f [%.2f-%.2f]", amps[m], amps[0], amps[len(amps)-1]),
		fmt.Sprintf("%d [%d-%d]", refused[m], refused[0], refused[len(refused)-1]),
		lastCell,
		fmt.Sprintf("%d of %d", ts.Within(d), len(ts)),
	}
}

// seconds formats d in seconds at most 1 s and over, in milliseconds
// below.
func seconds(d time.Duration) string {
	switch {
	case d == 0:
		return "0"
	case d < time.Second:
		return Millis(d)
	}
	return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + " s"
}

// RecoveryBound is the recovery a client sending rate requests a second
// is held to: its last refusal within 1 s of healing, or within 5 of its
// requests when these take longer.
func RecoveryBound(rate float64) time.Duration {
	return max(time.Second, time.Duration(5*float64(time.Second)/rate))
}

// The periods of the rate runs: 15 s healthy, 30 s of 503, a minute
// healed.
const (
	rateHealthy = 15 * time.Second
	rateDown    = 30 * time.Second
	rateAfter   = 60 * time.Second
)

// RateLibraries returns the libraries of the rate tables, in table order:
// retryhttp with adaptive throttling, without it, and failsafe-go's retry
// policy around its adaptive throttler.
func RateLibraries() []peers.Library {
	return []peers.Library{
		{Name: peers.RetryHTTPThrottling, New: peers.NewRetryHTTPThrottling},
		{Name: peers.RetryHTTP, New: peers.NewRetryHTTP},
		{Name: peers.FailsafeThrottler, New: peers.NewFailsafeThrottler},
	}
}

// ThrottleRates runs trials trials of each library of libs at each rate,
// one process sending, and returns the table and the trials, by library
// and then rate.
func ThrottleRates(t *testing.T, libs []peers.Library, rates []float64, trials int) (Table, [][]Trials) {
	tb := Table{
		Title: "throttling: one process at each rate, a 30 s outage",
		Note: fmt.Sprintf("GETs at an even rate (open loop) to a host in memory: 15 s healthy, 30 s of 503, "+
			"then a minute healed; %d trials each in virtual time (testing/synctest). Outage: attempts reaching "+
			"the host per request started during it, median [min-max]. Refused after healing: median [min-max]. "+
			"Last refusal: from healing to the start of the last request refused, median [max]. Within: the "+
			"trials whose last refusal came within 1 s of healing, or within 5 requests where these take longer. "+
			"3 attempts, a constant 50 ms before each retry, budgets as by default.", trials),
		Header: []string{"requests a second", "library", "outage: reaching the host per request", "refused after healing",
			"last refusal after healing", "within max(1 s, 5 requests)"},
	}
	out := make([][]Trials, len(libs))
	for _, rate := range rates {
		for i, lib := range libs {
			var ts Trials
			for range trials {
				rr := RateRun{Rate: rate, Healthy: rateHealthy, Down: rateDown, After: rateAfter}
				ts = append(ts, rr.Run(t, Apart(lib, RateConfig)))
			}
			out[i] = append(out[i], ts)
			tb.Add(append([]string{strconv.FormatFloat(rate, 'f', -1, 64), lib.Name}, ts.cells(RecoveryBound(rate))...)...)
		}
	}
	return tb, out
}

// ThrottleFlapping runs trials trials of each library of libs against a
// host that flaps, 2 s up and 2 s down, for 30 s, at 20 requests a second,
// and returns the table and the trials, by library.
func ThrottleFlapping(t *testing.T, libs []peers.Library, trials int) (Table, []Trials) {
	tb := Table{
		Title: "throttling: a host flapping 2 s up, 2 s down",
		Note: fmt.Sprintf("20 GETs a second from one process, the host flapping for 30 s after 15 s healthy; %d "+
			"trials in virtual time. The requests started while the host was up, and the share of them that "+
			"succeeded. 3 attempts, a constant 50 ms before each retry.", trials),
		Header: []string{"library", "sent while up", "succeeded"},
	}
	out := make([]Trials, len(libs))
	for i, lib := range libs {
		sent, ok := 0, 0
		for range trials {
			rr := RateRun{Rate: 20, Healthy: rateHealthy, Down: rateDown, After: time.Second,
				FlapUp: 2 * time.Second, FlapDown: 2 * time.Second}
			r := rr.Run(t, Apart(lib, RateConfig))
			out[i] = append(out[i], r)
			sent, ok = sent+r.UpSent, ok+r.UpOK
		}
		tb.Add(lib.Name, strconv.Itoa(sent), Percent(ok, sent))
	}
	return tb, out
}

// A FleetRow is one way a fleet's processes throttle, a row of the fleet
// table.
type FleetRow struct {
	Name string
	// Trial returns the clients of trial number trial, outside its
	// bubble, and what to call halfway through its outage, if anything.
	Trial func(trial int) (Clients, func())
}

// ThrottleFleet runs trials trials of each row: 20 processes each sending
// 1 request a second, and returns the table and the trials, by row.
func ThrottleFleet(t *testing.T, rows []FleetRow, trials int) (Table, []Trials) {
	tb := Table{
		Title: "throttling: a fleet of 20 processes at 1 request a second each",
		Note: fmt.Sprintf("20 processes, each a Transport of its own, sending 1 GET a second each in turn (20 a "+
			"second in all) to a host in memory: 15 s healthy, 30 s of 503, then a minute healed; %d trials in "+
			"virtual time. Columns as in the one-process table; within 5 s is within 5 requests of each "+
			"process. 3 attempts, a constant 50 ms before each retry.", trials),
		Header: []string{"fleet", "outage: reaching the host per request", "refused after healing",
			"last refusal after healing", "within 1 s", "within 5 s", "errors other than refusals"},
	}
	out := make([]Trials, len(rows))
	for i, row := range rows {
		for trial := range trials {
			clients, mid := row.Trial(trial)
			rr := RateRun{Rate: 20, Processes: 20, Healthy: rateHealthy, Down: rateDown, After: rateAfter, MidOutage: mid}
			out[i] = append(out[i], rr.Run(t, clients))
		}
		tb.Add(append(append([]string{row.Name}, out[i].cells(time.Second)...),
			fmt.Sprintf("%d of %d", out[i].Within(5*time.Second), trials), strconv.Itoa(out[i].Errs()))...)
	}
	return tb, out
}
