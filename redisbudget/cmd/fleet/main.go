// Command fleet measures what a fleet of client processes does to a
// dependency that is down, with a retry budget of each process's own and
// with one budget shared through Redis. It starts a redis-server on a
// loopback port (redis-server must be installed), a local server, and client
// processes (copies of itself), and prints its figures as Markdown tables:
//
//   - outage: N processes each send R GETs at concurrency C to a server that
//     answers 503 to everything; then the same with churn, every process
//     exiting and a new one starting after each 200, and each 50, requests.
//   - dies: the outage with shared budgets, paced to last about three
//     seconds, while redis-server is killed after one second and started
//     again half a second later.
//   - healthy: every first attempt succeeds, or 1 in 100 fails once; the
//     Redis commands the shared budget sends per 1000 successful requests.
//
// Usage:
//
//	go run ./cmd/fleet [-processes 8] [-requests 2000] [-concurrency 8] [-only outage,dies,healthy]
//
// All traffic stays on loopback, and every run is bounded by its request
// count.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/retryhttp/retryhttp/redisbudget"
	"github.com/retryhttp/retryhttp/redisbudget/internal/redisserver"
)

// attemptHeader tells the server which attempt of a request it sees.
const attemptHeader = "Retry-Attempt"

func main() {
	if len(os.Args) > 1 && os.Args[1] == "-child" {
		if err := childMain(os.Args[2:]); err != nil {
			log.Fatal("fleet child: ", err)
		}
		return
	}
	processes := flag.Int("processes", 8, "client processes at once")
	requests := flag.Int("requests", 2000, "requests per process slot")
	concurrency := flag.Int("concurrency", 8, "requests in flight per process")
	only := flag.String("only", "outage,dies,healthy", "comma-separated scenarios to run")
	churn := flag.Int("churn", 0, "in the dies scenario, requests after which each process exits and a new one starts (0: none)")
	down := flag.Duration("down", 500*time.Millisecond, "in the dies scenario, how long redis-server stays down")
	flag.Parse()
	if *processes < 1 || *requests < 1 || *concurrency < 1 || *churn < 0 || *down <= 0 {
		log.Fatal("fleet: -processes, -requests, -concurrency and -down must be positive, -churn not negative")
	}
	f, err := newFleet(*processes, *requests, *concurrency)
	if err != nil {
		log.Fatal("fleet: ", err)
	}
	f.churn, f.down = *churn, *down
	defer f.close()
	for _, s := range strings.Split(*only, ",") {
		var err error
		switch strings.TrimSpace(s) {
		case "outage":
			err = f.outage(os.Stdout)
		case "dies":
			err = f.dies(os.Stdout)
		case "healthy":
			err = f.healthy(os.Stdout)
		default:
			err = fmt.Errorf("unknown scenario %q", s)
		}
		if err != nil {
			f.close()
			log.Fatal("fleet: ", err)
		}
	}
}

// A fleet holds the redis-server, the dependency and the fleet's shape.
type fleet struct {
	redis       *redisserver.Server
	dir         string
	srv         *server
	processes   int
	requests    int
	concurrency int
	exe         string
	runs        int           // names each run's shared budget
	churn       int           // dies: requests per process, 0 for one process per slot
	down        time.Duration // dies: how long Redis stays down
}

func newFleet(processes, requests, concurrency int) (*fleet, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "fleet-redis-")
	if err != nil {
		return nil, err
	}
	rs, err := redisserver.Start(dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	srv, err := startServer()
	if err != nil {
		rs.Close()
		os.RemoveAll(dir)
		return nil, err
	}
	return &fleet{redis: rs, dir: dir, srv: srv, processes: processes, requests: requests,
		concurrency: concurrency, exe: exe}, nil
}

func (f *fleet) close() {
	f.srv.close()
	f.redis.Close()
	os.RemoveAll(f.dir)
}

// spawn runs one client process with job j and returns its report.
func (f *fleet) spawn(j job) (*report, error) {
	args := []string{"-child", "-url", j.URL, "-name", j.Name, "-processes", strconv.Itoa(j.Processes),
		"-requests", strconv.Itoa(j.Requests), "-concurrency", strconv.Itoa(j.Concurrency),
		"-pace", j.Pace.String()}
	if j.Redis != "" {
		args = append(args, "-redis", j.Redis)
	}
	cmd := exec.Command(f.exe, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("client process: %w", err)
	}
	var r report
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		return nil, fmt.Errorf("client process report: %w", err)
	}
	return &r, nil
}

// runSlots runs the fleet: f.processes slots at once, each sending
// f.requests requests through a succession of processes that each send
// lifetime of them (all of them when lifetime is 0). It returns every
// process's report.
func (f *fleet) runSlots(shared bool, lifetime int, pace time.Duration, slots int) ([]*report, error) {
	f.runs++
	base := job{URL: f.srv.url, Name: "fleet-run-" + strconv.Itoa(f.runs) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36),
		Processes: slots, Concurrency: f.concurrency, Pace: pace}
	if shared {
		base.Redis = f.redis.Addr
	}
	if lifetime <= 0 || lifetime > f.requests {
		lifetime = f.requests
	}
	var (
		mu      sync.Mutex
		reports []*report
		firstEr error
		wg      sync.WaitGroup
	)
	for range slots {
		wg.Go(func() {
			for left := f.requests; left > 0; left -= lifetime {
				j := base
				j.Requests = min(lifetime, left)
				r, err := f.spawn(j)
				mu.Lock()
				if err != nil && firstEr == nil {
					firstEr = err
				}
				if r != nil {
					reports = append(reports, r)
				}
				mu.Unlock()
				if err != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	return reports, firstEr
}

// outage prints the fleet outage and churn table.
func (f *fleet) outage(w io.Writer) error {
	f.srv.mode.Store(modeDown)
	rows := []struct {
		label    string
		slots    int
		lifetime int
	}{
		{"1 process", 1, 0},
		{fmt.Sprintf("%d processes", f.processes), f.processes, 0},
		{fmt.Sprintf("%d slots, a new process every 200 requests", f.processes), f.processes, 200},
		{fmt.Sprintf("%d slots, a new process every 50 requests", f.processes), f.processes, 50},
	}
	fmt.Fprintf(w, "Outage: every request answered 503; %d requests per slot at concurrency %d, default budgets.\n\n", f.requests, f.concurrency)
	fmt.Fprintln(w, "| fleet | client requests | retries, local budgets | amplification | retries, shared budget | amplification |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	for _, row := range rows {
		var cells []string
		var requests int64
		for _, shared := range []bool{false, true} {
			f.srv.reset()
			reports, err := f.runSlots(shared, row.lifetime, 0, row.slots)
			if err != nil {
				return err
			}
			c := f.srv.counts()
			requests = c.first
			if errs := sum(reports, func(r *report) int64 { return r.Errors }); errs > 0 {
				return fmt.Errorf("%s: %d requests ended in an error", row.label, errs)
			}
			cells = append(cells, strconv.FormatInt(c.retries, 10),
				fmt.Sprintf("%.3f", float64(c.first+c.retries)/float64(c.first)))
		}
		fmt.Fprintf(w, "| %s | %d | %s |\n", row.label, requests, strings.Join(cells, " | "))
	}
	fmt.Fprintln(w)
	return nil
}

// dies runs the outage with shared budgets while redis-server is killed
// and started again, and prints what the clients saw.
func (f *fleet) dies(w io.Writer) error {
	f.srv.mode.Store(modeDown)
	f.srv.reset()
	const killAt = time.Second
	restartIn := f.down
	if restartIn <= 0 {
		restartIn = 500 * time.Millisecond
	}
	// Pace each worker so that a slot's requests last until 1.5 s after
	// the restart.
	span := killAt + restartIn + 1500*time.Millisecond
	pace := span * time.Duration(f.concurrency) / time.Duration(f.requests)

	var (
		reports []*report
		err     error
		done    = make(chan struct{})
	)
	start := time.Now()
	go func() {
		defer close(done)
		reports, err = f.runSlots(true, f.churn, pace, f.processes)
	}()
	var killed, restarted time.Time
	var before, during countsT
	select {
	case <-done:
		return fmt.Errorf("the run ended before Redis was killed; raise -requests")
	case <-time.After(killAt):
	}
	before = f.srv.counts()
	f.redis.Kill()
	killed = time.Now()
	time.Sleep(restartIn) // the outage of Redis
	if rerr := f.redis.Restart(); rerr != nil {
		<-done
		return rerr
	}
	restarted = time.Now()
	during = f.srv.counts()
	<-done
	if err != nil {
		return err
	}
	after := f.srv.counts()
	elapsed := time.Since(start)

	var back time.Duration // the latest return to Redis after the restart
	returned := 0
	for _, r := range reports {
		for _, t := range r.Shared {
			if t.Shared && t.At >= killed.UnixNano() {
				back = max(back, time.Unix(0, t.At).Sub(restarted))
				returned++
				break
			}
		}
	}
	errs := sum(reports, func(r *report) int64 { return r.Errors })
	var stall time.Duration
	for _, r := range reports {
		stall = max(stall, r.MaxWithdraw)
	}
	churn := "each slot one process"
	if f.churn > 0 && f.churn < f.requests {
		churn = fmt.Sprintf("a new process every %d requests in each slot (%d processes in all)", f.churn, len(reports))
	}
	fmt.Fprintf(w, "Redis dies: %d process slots, %d requests each at concurrency %d over %.1f s, %s, shared budget (WithProcesses(%d));\n",
		f.processes, f.requests, f.concurrency, elapsed.Seconds(), churn, f.processes)
	fmt.Fprintf(w, "redis-server killed at %.1f s and started again %v later (empty: no persistence).\n\n", killAt.Seconds(), restartIn)
	fmt.Fprintln(w, "| measure | value |")
	fmt.Fprintln(w, "|---|---|")
	fmt.Fprintf(w, "| client requests | %d |\n", after.first)
	fmt.Fprintf(w, "| requests that ended in an error | %d |\n", errs)
	fmt.Fprintf(w, "| longest wait of a retry for the budget (timeout %v) | %v |\n", redisbudget.DefaultTimeout, stall.Round(100*time.Microsecond))
	fmt.Fprintf(w, "| retries before the kill | %d |\n", before.retries)
	fmt.Fprintf(w, "| retries while Redis was down (fallback buckets) | %d |\n", during.retries-before.retries)
	fmt.Fprintf(w, "| retries after the restart (a new, full bucket) | %d |\n", after.retries-during.retries)
	fmt.Fprintf(w, "| processes back on Redis | %d of %d |\n", returned, len(reports))
	fmt.Fprintf(w, "| latest return to Redis after the restart | %v |\n", back.Round(time.Millisecond))
	takes := sum(reports, func(r *report) int64 { return r.Commands["take"] })
	retries := sum(reports, func(r *report) int64 { return r.Retries })
	fmt.Fprintf(w, "| scripts that took or refused a retry (all processes, whole run) | %d, for %d retries made |\n", takes, retries)
	fmt.Fprintln(w)
	return nil
}

// healthy measures the Redis commands of healthy traffic.
func (f *fleet) healthy(w io.Writer) error {
	fmt.Fprintf(w, "Healthy traffic: %d processes, %d requests each at concurrency %d, shared budget.\n\n", f.processes, f.requests*5, f.concurrency)
	fmt.Fprintln(w, "| traffic | successful requests | retries | Redis commands | per 1000 successful requests | of which take / refund / connection and script setup |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	for _, m := range []struct {
		label string
		mode  int32
	}{
		{"every first attempt succeeds", modeUp},
		{"1 in 100 first attempts fails once (503)", modeFlaky},
	} {
		f.srv.mode.Store(m.mode)
		f.srv.reset()
		saved := f.requests
		f.requests *= 5
		reports, err := f.runSlots(true, 0, 0, f.processes)
		f.requests = saved
		if err != nil {
			return err
		}
		ok := sum(reports, func(r *report) int64 { return r.Statuses[200] })
		take := sum(reports, func(r *report) int64 { return r.Commands["take"] })
		refund := sum(reports, func(r *report) int64 { return r.Commands["refund"] })
		all := sum(reports, func(r *report) int64 {
			var n int64
			for _, v := range r.Commands {
				n += v
			}
			return n
		})
		retries := sum(reports, func(r *report) int64 { return r.Retries })
		fmt.Fprintf(w, "| %s | %d | %d | %d | %.2f | %d / %d / %d |\n", m.label, ok, retries, all,
			1000*float64(all)/float64(max(ok, 1)), take, refund, all-take-refund)
	}
	fmt.Fprintln(w)
	return nil
}

func sum(reports []*report, f func(*report) int64) int64 {
	var n int64
	for _, r := range reports {
		n += f(r)
	}
	return n
}

// Server modes.
const (
	modeDown  int32 = iota // 503 to everything
	modeUp                 // 200 to everything
	modeFlaky              // 503 to 1 in 100 first attempts, 200 otherwise
)

// server is the dependency: it counts first attempts and retries, told
// apart by the attempt header.
type server struct {
	url     string
	ln      net.Listener
	hs      *http.Server
	mode    atomic.Int32
	first   atomic.Int64
	retries atomic.Int64
}

type countsT struct{ first, retries int64 }

func startServer() (*server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &server{url: "http://" + ln.Addr().String() + "/", ln: ln}
	s.hs = &http.Server{Handler: http.HandlerFunc(s.serve), ReadHeaderTimeout: 10 * time.Second}
	go s.hs.Serve(ln)
	return s, nil
}

func (s *server) serve(w http.ResponseWriter, r *http.Request) {
	retry := !strings.HasPrefix(r.Header.Get(attemptHeader), "1/")
	var n int64
	if retry {
		s.retries.Add(1)
	} else {
		n = s.first.Add(1)
	}
	switch mode := s.mode.Load(); {
	case mode == modeDown, mode == modeFlaky && !retry && n%100 == 0:
		w.WriteHeader(http.StatusServiceUnavailable)
	default:
		w.WriteHeader(http.StatusOK)
	}
}

func (s *server) reset() {
	s.first.Store(0)
	s.retries.Store(0)
}

func (s *server) counts() countsT {
	return countsT{s.first.Load(), s.retries.Load()}
}

func (s *server) close() { s.hs.Close() }
