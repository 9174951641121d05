package scenario

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/retryhttp/retryhttp/pace"

	"github.com/retryhttp/retryhttp/bench/peers"
)

// A FleetLoad is the shape of the fleet part of the quota scenario:
// Processes processes each offered Rate GETs a second for Length (open
// loop, each with a deadline of Timeout) against one loopback token bucket
// of Quota a second (burst Burst) in this process, which answers 429 with
// Retry-After: 1 beyond it; Redis killed at KillAt in the run that kills
// it; the same load from InProcess Transports in one process in the rows
// that share a pace.NewMemoryStore.
type FleetLoad struct {
	Processes, Rate int
	Length, Timeout time.Duration
	KillAt          time.Duration
	Quota, Burst    float64
	InProcess       int
}

// DefaultFleetLoad returns the fleet of the quota scenario: 20 processes
// at 10 a second each for 20 s, deadlines of 5 s, a quota of 50 a second
// (burst 10), Redis killed at 10 s, and 4 Transports in one process.
func DefaultFleetLoad() FleetLoad {
	return FleetLoad{Processes: 20, Rate: 10, Length: 20 * time.Second, Timeout: 5 * time.Second,
		KillAt: 10 * time.Second, Quota: 50, Burst: 10, InProcess: 4}
}

// A FleetShare is how the members of a fleet run pace.
type FleetShare int

// The ways a fleet run's members pace.
const (
	PaceAlone        FleetShare = iota // each process paces alone (WithPacing())
	PaceThroughRedis                   // pace.Shared(redisbudget.NewPaceStore(rdb, "quota")), one redis-server
	PaceInMemory                       // Transports of one process share a pace.NewMemoryStore()
)

// A FleetRun is one row of the fleet table.
type FleetRun struct {
	Name     string
	Load     FleetLoad
	Share    FleetShare
	Announce bool // OpenAI's x-ratelimit-*-requests on every answer
	Kill     bool // redis-server killed at Load.KillAt
}

// Runs returns the rows of the fleet table, in table order: through Redis
// without quota headers, with OpenAI's, and with them and Redis killed;
// the processes pacing alone, without headers and with them; and the
// Transports of one process sharing a memory store, without and with, as
// many as InProcess and then as many as there are processes (what Redis
// and the processes add, apart from their number).
func (l FleetLoad) Runs() []FleetRun {
	procs := fmt.Sprintf("%d processes", l.Processes)
	inProcess := fmt.Sprintf("%d Transports in one process", l.InProcess)
	many := l
	many.InProcess = l.Processes
	inMany := fmt.Sprintf("%d Transports in one process", l.Processes)
	return []FleetRun{
		{procs + " through Redis, no quota headers", l, PaceThroughRedis, false, false},
		{procs + " through Redis, OpenAI's headers", l, PaceThroughRedis, true, false},
		{fmt.Sprintf("%s through Redis, OpenAI's headers, Redis killed at %g s", procs, l.KillAt.Seconds()),
			l, PaceThroughRedis, true, true},
		{procs + " pacing alone, no quota headers", l, PaceAlone, false, false},
		{procs + " pacing alone, OpenAI's headers", l, PaceAlone, true, false},
		{inProcess + ", a memory store, no quota headers", l, PaceInMemory, false, false},
		{inProcess + ", a memory store, OpenAI's headers", l, PaceInMemory, true, false},
		{inMany + ", a memory store, no quota headers", many, PaceInMemory, false, false},
		{inMany + ", a memory store, OpenAI's headers", many, PaceInMemory, true, false},
	}
}

// settle is how long the fleet has to learn the quota: the server's
// figures count from then on.
const settle = 2 * time.Second

// afterKill is the window after Redis dies that the kill run measures.
const afterKill = 10 * time.Second

// A FleetResult is what one fleet run measured.
type FleetResult struct {
	MemberResult // the requests of every member together

	Reached   int     // attempts that reached the server from 2 s on
	Throttled int     // of them, those answered 429
	Admitted  int     // requests admitted from 2 s to the end of the load
	Allowed   float64 // what the quota allowed then
	// KillReached and KillThrottled count the attempts that reached the
	// server in the 10 s after Redis was killed, and the 429s of them.
	KillReached, KillThrottled int
	// BySecond counts the 429s, and AdmittedBySecond the requests
	// admitted, in each second of the run, to its last attempt.
	BySecond, AdmittedBySecond []int
	Ready                      time.Duration // how long the processes took to be ready
}

// ThrottledShare is the share of the attempts reaching the server from
// 2 s on that were answered 429.
func (r FleetResult) ThrottledShare() float64 {
	return float64(r.Throttled) / float64(max(r.Reached, 1))
}

// OfQuota is the share of the quota the server admitted from 2 s to the
// end of the load.
func (r FleetResult) OfQuota() float64 { return float64(r.Admitted) / max(r.Allowed, 1) }

// KillShare is the share of 429s in the 10 s after Redis was killed.
func (r FleetResult) KillShare() float64 {
	return float64(r.KillThrottled) / float64(max(r.KillReached, 1))
}

// Run runs fr: its processes copies of self (run with -quota-fleet-member)
// or, in PaceInMemory, Transports of this process; a redis-server with its
// files in dir when it shares through Redis.
func (fr FleetRun) Run(ctx context.Context, self, dir string) (FleetResult, error) {
	l := fr.Load
	ctx, cancel := context.WithTimeout(ctx, l.Length+l.Timeout+time.Minute)
	defer cancel()
	q := newQuota(QuotaRun{Quota: l.Quota, Burst: l.Burst, Announce: fr.Announce})
	srv := NewServer(q.serve)
	defer srv.Close()

	var res FleetResult
	var err error
	if fr.Share == PaceInMemory {
		res.MemberResult = fr.inProcess(ctx, srv.URL, q)
	} else if res.MemberResult, res.Ready, err = fr.processes(ctx, self, dir, srv.URL, q); err != nil {
		return res, err
	}

	q.mu.Lock()
	defer q.mu.Unlock()
	end := q.last + time.Nanosecond
	res.Throttled = count(q.refused, settle, end)
	res.Reached = res.Throttled + count(q.admitted, settle, end)
	res.Admitted = count(q.admitted, settle, l.Length)
	res.Allowed = l.Quota * (l.Length - settle).Seconds()
	for at := time.Duration(0); at < end; at += time.Second {
		res.BySecond = append(res.BySecond, count(q.refused, at, at+time.Second))
		res.AdmittedBySecond = append(res.AdmittedBySecond, count(q.admitted, at, at+time.Second))
	}
	if fr.Kill {
		res.KillThrottled = count(q.refused, l.KillAt, l.KillAt+afterKill)
		res.KillReached = res.KillThrottled + count(q.admitted, l.KillAt, l.KillAt+afterKill)
	}
	return res, nil
}

// inProcess sends fr's load to url from Transports of this process that
// share a memory store, and starts q's clock at their start.
func (fr FleetRun) inProcess(ctx context.Context, url string, q *quota) MemberResult {
	l := fr.Load
	store := pace.NewMemoryStore()
	start := time.Now()
	q.begin(start)
	rate := l.Processes * l.Rate / l.InProcess
	var res MemberResult
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range l.InProcess {
		wg.Go(func() {
			cl := client(peers.RetryHTTPPaced(peers.RetryHTTPPacing, pace.Shared(store)), peers.NewBase(), QuotaConfig)
			defer cl.CloseIdleConnections()
			r := openLoop(ctx, cl, url, fmt.Sprint("t", i, "-"), rate, l.Length, l.Timeout, start)
			mu.Lock()
			defer mu.Unlock()
			res.add(r)
		})
	}
	wg.Wait()
	return res
}

// processes sends fr's load to url from member processes, copies of self,
// sharing through a redis-server with its files in dir when fr says so
// (and killing it when fr says so), and starts q's clock at their start.
// It returns what the members got and how long they took to be ready.
func (fr FleetRun) processes(ctx context.Context, self, dir, url string, q *quota) (MemberResult, time.Duration, error) {
	l := fr.Load
	m := FleetMember{URL: url, Rate: l.Rate, Length: l.Length, Timeout: l.Timeout, Store: "quota"}
	var rds *Redis
	if fr.Share == PaceThroughRedis {
		var err error
		if rds, err = StartRedis(dir); err != nil {
			return MemberResult{}, 0, err
		}
		defer rds.Kill()
		m.Redis = rds.Addr
	}
	t0 := time.Now()
	f, err := startFleet(ctx, self, m, l.Processes)
	defer f.stop()
	if err != nil {
		return MemberResult{}, 0, err
	}
	ready := time.Since(t0)
	start := time.Now().Add(50 * time.Millisecond)
	q.begin(start)
	if fr.Kill && rds != nil {
		kill := time.AfterFunc(time.Until(start.Add(l.KillAt)), rds.Kill)
		defer kill.Stop()
	}
	rs, err := f.run(start)
	var res MemberResult
	for _, r := range rs {
		res.add(r)
	}
	return res, ready, err
}

// QuotaFleet runs the fleet part of the quota scenario: every run of
// DefaultFleetLoad's Runs, one after the other, its processes copies of
// self.
func QuotaFleet(ctx context.Context, _ Params, self string) []Table {
	l := DefaultFleetLoad()
	tb := l.table()
	dir, err := os.MkdirTemp("", "quota-fleet-")
	if err != nil {
		tb.Add("error: " + err.Error())
		return []Table{tb}
	}
	defer os.RemoveAll(dir)
	seconds := Table{
		Title: "quota: the fleet, second by second",
		Note: "The same runs: the requests the server admitted, and the attempts it answered 429, in each " +
			"second from the start, to the run's last attempt.",
		Header: []string{"fleet", "admitted in each second", "429s in each second"},
	}
	for _, fr := range l.Runs() {
		r, err := fr.Run(ctx, self, dir)
		if err != nil {
			tb.Add(fr.Name, "error: "+strings.ReplaceAll(err.Error(), "\n", " "))
			continue
		}
		tb.Add(fr.cells(r)...)
		seconds.Add(fr.Name, strings.Trim(fmt.Sprint(r.AdmittedBySecond), "[]"), strings.Trim(fmt.Sprint(r.BySecond), "[]"))
	}
	return []Table{tb, seconds}
}

// table returns the empty table of l's runs.
func (l FleetLoad) table() Table {
	return Table{
		Title: fmt.Sprintf("quota: a fleet of %d processes at %d a second each, a quota of %g a second",
			l.Processes, l.Rate, l.Quota),
		Note: fmt.Sprintf("%d OS processes, each a retryhttp Transport with pacing offered %d GETs a second for "+
			"%g s (open loop, each with a deadline of %g s), against one loopback token bucket of %g a second "+
			"(burst %g) that answers 429 with Retry-After: 1 beyond it, with OpenAI's x-ratelimit-*-requests "+
			"headers or without; through Redis: pace.Shared(redisbudget.NewPaceStore(rdb, \"quota\")) on one "+
			"real redis-server, killed (SIGKILL) at %g s in the third run; alone: WithPacing(); in one process: "+
			"the same load from %d Transports, and from %d, sharing a pace.NewMemoryStore(). 429s: of the "+
			"attempts reaching "+
			"the server from 2 s on. Of the quota: requests admitted from 2 s to the end of the load. Waits: "+
			"of the requests that succeeded, from their start to their answer (mostly their wait for a turn). "+
			"Exchanges: the PaceStore's script runs in each process, timed by a go-redis hook; on a "+
			"request's path: the Redis commands of any kind sent from a goroutine under a RoundTrip (read "+
			"from its stack), the only way a request could be held waiting on Redis that the hook can see. "+
			"3 attempts, retryhttp's own delays and budget.",
			l.Processes, l.Rate, l.Length.Seconds(), l.Timeout.Seconds(), l.Quota, l.Burst, l.KillAt.Seconds(),
			l.InProcess, l.Processes),
		Header: []string{"fleet", "429s after 2 s", "of the quota after 2 s", "429s in the 10 s after Redis died",
			"succeeded", "refused by pacing", "failed otherwise", "waits p50 / p99", "exchanges (failed)",
			"exchange p99 / longest", "exchanges on a request's path"},
	}
}

// cells returns fr's row of r.
func (fr FleetRun) cells(r FleetResult) []string {
	waits := slices.Clone(r.Waits)
	slices.Sort(waits)
	kill, exchanges, took, onPath := "–", "–", "–", "–"
	if fr.Kill {
		kill = fmt.Sprintf("%d (%s)", r.KillThrottled, Percent(r.KillThrottled, r.KillReached))
	}
	if fr.Share == PaceThroughRedis {
		ex := slices.Clone(r.Exchanges)
		slices.Sort(ex)
		exchanges = fmt.Sprintf("%d (%d)", len(ex), r.ExchangeErrs)
		if len(ex) > 0 {
			took = micros(quantile(ex, 0.99)) + " / " + micros(ex[len(ex)-1])
		}
		onPath = strconv.Itoa(r.OnRequestPath)
	}
	other := strconv.Itoa(r.Deadline + r.Got429 + r.Failed)
	if r.Deadline+r.Got429+r.Failed > 0 {
		other += fmt.Sprintf(" (%d deadline, %d 429, %d other)", r.Deadline, r.Got429, r.Failed)
	}
	return []string{fr.Name,
		fmt.Sprintf("%d (%s)", r.Throttled, Percent(r.Throttled, r.Reached)),
		fmt.Sprintf("%.1f%%", 100*r.OfQuota()),
		kill,
		fmt.Sprintf("%d (%s)", r.OK, Percent(r.OK, r.Requests)),
		strconv.Itoa(r.Paced), other,
		Millis(quantile(waits, 0.5)) + " / " + Millis(quantile(waits, 0.99)),
		exchanges, took, onPath,
	}
}
