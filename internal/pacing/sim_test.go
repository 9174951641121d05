package pacing

import (
	"container/heap"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/retryhttp/retryhttp/internal/config"
	"github.com/retryhttp/retryhttp/internal/wire"
	"github.com/stretchr/testify/assert"
)

// The simulation: an open-loop client sends a request every arrival
// (200/s) through a Pacer to a server that admits them by a token bucket,
// in virtual time. A request whose turn is further off than maxWait (at
// Reserve, or when a throttle puts it off) is refused, never sent.

type simConfig struct {
	duration time.Duration
	arrival  time.Duration
	maxWait  time.Duration
	rtt      time.Duration
	burst    float64
	quota    func(t time.Duration) float64 // the bucket's rate at t
	// headers, if not nil, returns the headers of a response when the
	// bucket holds tokens after admitting it or not.
	headers func(tokens, rate, burst float64) http.Header
	// seed, if not 0, draws each request's round trip from rtt/2 to
	// 3*rtt/2.
	seed uint64
}

type simSend struct {
	at     time.Duration
	status int
}

type simResult struct {
	sends   []simSend
	refused int
	changes []Change
}

type simEvent struct {
	at   time.Duration
	seq  int
	kind int // simArrive, simWake, simServe, simRespond
	// of the request
	arrived time.Duration
	sent    time.Duration
	rtt     time.Duration
	turn    Turn
	stale   *bool // set once its caller was woken before it
	status  int
	header  http.Header
}

const (
	simArrive = iota
	simWake
	simServe
	simRespond
)

type simQueue []*simEvent

func (q simQueue) Len() int { return len(q) }
func (q simQueue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}
func (q simQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *simQueue) Push(x any)   { *q = append(*q, x.(*simEvent)) }
func (q *simQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

var simBase = time.Date(2026, time.March, 4, 12, 0, 0, 0, time.UTC)

func simulate(c simConfig) simResult {
	p := New(config.NewPace())
	k := Key{Host: wire.MakeKey("https", "api.example.com")}
	var (
		q      simQueue
		seq    int
		res    simResult
		tokens = c.burst
		filled time.Duration
	)
	push := func(e *simEvent) {
		seq++
		e.seq = seq
		heap.Push(&q, e)
	}
	// asleep are the callers waiting for their turns, each woken at its
	// nap's end, or at once when its turn's Woken channel closes, as a
	// Transport's are.
	asleep := map[*bool]*simEvent{}
	sleep := func(e *simEvent) {
		e.stale = new(bool)
		asleep[e.stale] = e
		push(e)
	}
	wakeEarly := func(at time.Duration) {
		for stale, w := range asleep {
			select {
			case <-w.turn.Woken():
				*stale = true
				delete(asleep, stale)
				sleep(&simEvent{at: at, kind: simWake, arrived: w.arrived, turn: w.turn})
			default:
			}
		}
	}
	for at := time.Duration(0); at < c.duration; at += c.arrival {
		push(&simEvent{at: at, kind: simArrive, arrived: at})
	}
	var rng *rand.Rand
	if c.seed != 0 {
		rng = rand.New(rand.NewPCG(c.seed, 1))
	}
	send := func(e *simEvent, now time.Duration) {
		rtt := c.rtt
		if rng != nil {
			rtt = c.rtt/2 + time.Duration(rng.Int64N(int64(c.rtt)+1))
		}
		push(&simEvent{at: now + rtt/2, kind: simServe, arrived: e.arrived, sent: now, rtt: rtt})
	}
	for q.Len() > 0 {
		e := heap.Pop(&q).(*simEvent)
		now := simBase.Add(e.at)
		switch e.kind {
		case simArrive:
			turn, wait, ok := p.Reserve(k, now, c.maxWait)
			switch {
			case !ok:
				res.refused++
			case wait == 0:
				send(e, e.at)
			default:
				sleep(&simEvent{at: e.at + turn.Nap(), kind: simWake, arrived: e.arrived, turn: turn})
			}
		case simWake:
			if *e.stale {
				continue
			}
			delete(asleep, e.stale)
			wait := e.turn.Wait(now)
			switch {
			case wait == 0:
				send(e, e.at)
			case e.at+wait-e.arrived > c.maxWait:
				e.turn.Release(now)
				res.refused++
			default:
				sleep(&simEvent{at: e.at + e.turn.Nap(), kind: simWake, arrived: e.arrived, turn: e.turn})
			}
			wakeEarly(e.at)
		case simServe:
			rate := c.quota(e.at)
			tokens = min(c.burst, tokens+rate*(e.at-filled).Seconds())
			filled = e.at
			status := http.StatusOK
			if tokens >= 1 {
				tokens--
			} else {
				status = http.StatusTooManyRequests
			}
			var h http.Header
			if c.headers != nil {
				h = c.headers(tokens, rate, c.burst)
			}
			push(&simEvent{at: e.sent + e.rtt, kind: simRespond, sent: e.sent, status: status, header: h})
		case simRespond:
			res.sends = append(res.sends, simSend{e.sent, e.status})
			if ch := p.Observe(k, simBase.Add(e.sent), now, e.status, e.header); ch.Event != None {
				res.changes = append(res.changes, ch)
			}
			wakeEarly(e.at)
		}
	}
	return res
}

// openAIHeaders are the headers of a server that announces its bucket as
// OpenAI announces its limits: the bucket's size, the whole requests it
// holds, and the time until it is full again.
func openAIHeaders(tokens, rate, burst float64) http.Header {
	full := time.Duration(math.Ceil((burst-tokens)/rate*1000)) * time.Millisecond
	return http.Header{
		"X-Ratelimit-Limit-Requests":     {strconv.Itoa(int(burst))},
		"X-Ratelimit-Remaining-Requests": {strconv.Itoa(int(tokens))},
		"X-Ratelimit-Reset-Requests":     {full.String()},
	}
}

// figures are what the simulation is judged by, from the first second on.
type figures struct {
	sent, throttled, accepted int
	throttledShare            float64 // of requests sent
	throughput                float64 // accepted a second
}

func (r simResult) figures(from, to time.Duration) figures {
	var f figures
	for _, s := range r.sends {
		if s.at < from || s.at >= to {
			continue
		}
		f.sent++
		if s.status == http.StatusTooManyRequests {
			f.throttled++
		} else {
			f.accepted++
		}
	}
	if f.sent > 0 {
		f.throttledShare = float64(f.throttled) / float64(f.sent)
	}
	f.throughput = float64(f.accepted) / (to - from).Seconds()
	return f
}

// recovery returns how long after at the requests accepted over the last
// second first reach want, or -1 if they never do.
func (r simResult) recovery(at time.Duration, want float64) time.Duration {
	var acc []time.Duration
	for _, s := range r.sends {
		if s.status != http.StatusTooManyRequests {
			acc = append(acc, s.at)
		}
	}
	j := 0
	for i, t := range acc {
		for acc[j] <= t-time.Second {
			j++
		}
		if t >= at && float64(i-j+1) >= want {
			return t - at
		}
	}
	return -1
}

func quotaOf(r float64) func(time.Duration) float64 {
	return func(time.Duration) float64 { return r }
}

func quotaRising(from, to float64, at time.Duration) func(time.Duration) float64 {
	return func(t time.Duration) float64 {
		if t < at {
			return from
		}
		return to
	}
}

// simScenario is the brief's loopback scenario: a token bucket of 50
// requests a second and a burst of 10, an open-loop client sending 200 a
// second for 10 s, each request allowed to wait a second for its turn.
func simScenario(rtt time.Duration, seed uint64, headers bool) simConfig {
	c := simConfig{duration: 10 * time.Second, arrival: 5 * time.Millisecond, maxWait: time.Second,
		rtt: rtt, burst: 10, quota: quotaOf(50), seed: seed}
	if headers {
		c.headers = openAIHeaders
	}
	return c
}

// riseRecovery returns the longest time, over rises at 13 points of a
// cycle, that the quota taking 100 a second in the place of 50 takes to be
// accepted at 90 a second over a second, and the least rate accepted from
// then on.
func riseRecovery(c simConfig) (worst time.Duration, after float64) {
	after = math.Inf(1)
	for at := 4 * time.Second; at <= 7*time.Second; at += 250 * time.Millisecond {
		c.duration = at + 8*time.Second
		c.quota = quotaRising(50, 100, at)
		r := simulate(c)
		rec := r.recovery(at, 90)
		if rec < 0 {
			rec = time.Hour
		}
		worst = max(worst, rec)
		after = min(after, r.figures(at+rec, c.duration).throughput)
	}
	return worst, after
}

// TestSimulation checks the pacer against the figures it is held to, on
// the scenario of simScenario, with a round trip of 1 ms (a loopback
// server) and, with two random draws of round trips from 0.5 to 1.5 times
// theirs, of 1 ms and 5 ms: after the first second, at most 1% of the
// requests sent answered 429 when the server announces nothing, and none
// when it announces its bucket; at least 95% of the quota taken; and when
// the quota rises to 100 a second, 90 of them taken over a second within
// 3 s.
func TestSimulation(t *testing.T) {
	for _, tt := range []struct {
		rtt  time.Duration
		seed uint64
	}{
		{time.Millisecond, 0},
		{time.Millisecond, 1},
		{5 * time.Millisecond, 2},
	} {
		for _, headers := range []bool{false, true} {
			name := fmt.Sprintf("rtt %v seed %d headers %t", tt.rtt, tt.seed, headers)
			t.Run(name, func(t *testing.T) {
				c := simScenario(tt.rtt, tt.seed, headers)
				r := simulate(c)
				f := r.figures(time.Second, c.duration)
				worst, after := riseRecovery(c)
				t.Logf("after 1s: %d sent, %d answered 429 (%.2f%%), %.1f accepted a second (%.1f%% of 50), %d refused in all; quota 50 to 100: 90/s over a second within %v at worst, %.1f/s from then",
					f.sent, f.throttled, 100*f.throttledShare, f.throughput, 2*f.throughput, r.refused, worst.Round(time.Millisecond), after)
				if headers {
					assert.Zero(t, f.throttled, "429s after the first second: got %d, want 0", f.throttled)
				} else {
					assert.LessOrEqual(t, f.throttledShare, 0.01, "share of 429s after the first second: got %.4f, want at most 0.01", f.throttledShare)
				}
				assert.GreaterOrEqual(t, f.throughput, 0.95*50, "accepted a second: got %.1f, want at least 47.5", f.throughput)
				assert.LessOrEqual(t, worst, 3*time.Second, "time to 90/s after the quota rises: got %v, want at most 3s", worst)
			})
		}
	}
}

// TestSimulationAtEveryQuota: without quota headers, at every quota from 5
// to 500 a second, an open-loop client sending 4 times the quota sees at
// most max(1% of its requests, one a 5 s) answered 429 from the 3rd second
// on, and the server takes at least 90% of the quota. Below 25 a second
// the bound held only once a cycle of few requests stopped reading its
// probe's overshoot as a rise, and a throttle in a cycle too short to tell
// cut by beta² at least: before, 8 429s where 7.6 are allowed at 20 a
// second, 12 at 10, 40 at 5 (now 7 at each).
func TestSimulationAtEveryQuota(t *testing.T) {
	for _, q := range []float64{5, 10, 20, 25, 50, 100, 200, 500} {
		t.Run(strconv.FormatFloat(q, 'f', -1, 64), func(t *testing.T) {
			c := simConfig{duration: 40 * time.Second, arrival: time.Duration(float64(time.Second) / (4 * q)),
				maxWait: time.Second, rtt: time.Millisecond, burst: max(2, q/5), quota: quotaOf(q), seed: 7}
			r := simulate(c)
			f := r.figures(2*time.Second, c.duration)
			allowed := max(0.01*float64(f.sent), (c.duration-2*time.Second).Seconds()/5)
			t.Logf("quota %v: from 2 s, %d sent, %d answered 429 (%.2f%%, %.2f a 5 s; allowed %.1f), %.1f%% of the quota taken",
				q, f.sent, f.throttled, 100*f.throttledShare, float64(f.throttled)/(c.duration-2*time.Second).Seconds()*5, allowed, 100*f.throughput/q)
			assert.LessOrEqual(t, float64(f.throttled), allowed)
			assert.GreaterOrEqual(t, f.throughput, 0.9*q)
		})
	}
}
