package scenario

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/retryhttp/retryhttp/pace"
	"github.com/retryhttp/retryhttp/redisbudget"

	"github.com/retryhttp/retryhttp/bench/peers"
)

// FleetMemberFlag is the flag by which the scenarios command (and this
// package's test binary) runs one member of a fleet run in a process of
// its own; its value is the member's FleetMember, in JSON.
const FleetMemberFlag = "quota-fleet-member"

// A FleetMember is what one process of a fleet run does: send Rate GETs a
// second to URL for Length from the start its parent gives it, open loop,
// each with a deadline of Timeout, through a retryhttp Transport with
// pacing, shared through a redisbudget.PaceStore named Store on the Redis
// at Redis, or alone when Redis is empty.
type FleetMember struct {
	URL     string
	Redis   string
	Store   string
	Rate    int
	Length  time.Duration
	Timeout time.Duration
	ID      string // tells the member's requests apart from the others'
}

// A MemberResult is what the requests of a member, or of several, got,
// and what their exchanges with Redis took.
type MemberResult struct {
	Requests int
	OK       int
	Paced    int // refused by pacing: a *pace.Error, never sent
	Deadline int // failed their deadline
	Got429   int // a 429 returned
	Failed   int // another status returned, or another error
	// Waits are the latencies of the requests that succeeded, from their
	// start to the end of their body: for a paced host, mostly the wait
	// for a turn.
	Waits []time.Duration
	// Exchanges are the durations of the PaceStore's exchanges (its
	// script's runs) and ExchangeErrs how many failed; OnRequestPath is
	// how many commands of any kind were sent from the goroutine of a
	// request, under a RoundTrip, and InRequests their time: what a
	// request was held waiting on Redis.
	Exchanges     []time.Duration
	ExchangeErrs  int
	OnRequestPath int
	InRequests    time.Duration
}

// add adds o's figures to r's.
func (r *MemberResult) add(o MemberResult) {
	r.Requests += o.Requests
	r.OK += o.OK
	r.Paced += o.Paced
	r.Deadline += o.Deadline
	r.Got429 += o.Got429
	r.Failed += o.Failed
	r.Waits = append(r.Waits, o.Waits...)
	r.Exchanges = append(r.Exchanges, o.Exchanges...)
	r.ExchangeErrs += o.ExchangeErrs
	r.OnRequestPath += o.OnRequestPath
	r.InRequests += o.InRequests
}

// RunFleetMember is the member process's side of a fleet run, given its
// FleetMember in JSON: it makes its Transport, writes "ready" to out,
// reads its start (Unix nanoseconds) from in, sends its requests from
// then, and writes its MemberResult to out in JSON.
func RunFleetMember(spec string, in io.Reader, out io.Writer) error {
	var m FleetMember
	if err := json.Unmarshal([]byte(spec), &m); err != nil {
		return fmt.Errorf("reading the member's job: %w", err)
	}
	if m.URL == "" || m.Rate < 1 || m.Length <= 0 || m.Timeout <= 0 {
		return fmt.Errorf("a member's job needs a URL, a rate, a length and a timeout: %+v", m)
	}
	var opts []pace.Option
	watch := &storeWatch{}
	if m.Redis != "" {
		rdb := redis.NewClient(&redis.Options{Addr: m.Redis})
		defer rdb.Close()
		rdb.AddHook(watch)
		opts = append(opts, pace.Shared(redisbudget.NewPaceStore(rdb, m.Store)))
	}
	cl := client(peers.RetryHTTPPaced(peers.RetryHTTPPacing, opts...), peers.NewBase(), QuotaConfig)
	defer cl.CloseIdleConnections()

	if _, err := io.WriteString(out, "ready\n"); err != nil {
		return err
	}
	line, err := bufio.NewReader(in).ReadString('\n')
	if err != nil {
		return fmt.Errorf("reading the start: %w", err)
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(line), 10, 64)
	if err != nil {
		return fmt.Errorf("reading the start: %w", err)
	}
	r := openLoop(context.Background(), cl, m.URL, m.ID, m.Rate, m.Length, m.Timeout, time.Unix(0, ns))
	watch.into(&r)
	return json.NewEncoder(out).Encode(r)
}

// fleetProcs are the member processes of a run.
type fleetProcs struct {
	members []*member
}

// A member is one process of a fleet, and the pipes to it.
type member struct {
	id     string
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	stderr bytes.Buffer
	done   bool // waited for
}

// startFleet starts n processes running self -quota-fleet-member with m,
// each its own ID, and waits until each says it is ready.
func startFleet(ctx context.Context, self string, m FleetMember, n int) (*fleetProcs, error) {
	f := &fleetProcs{}
	for i := range n {
		m.ID = fmt.Sprint("p", i, "-")
		spec, err := json.Marshal(m)
		if err != nil {
			return f, err
		}
		mb := &member{id: m.ID, cmd: exec.CommandContext(ctx, self, "-"+FleetMemberFlag, string(spec))}
		mb.cmd.Stderr = &mb.stderr
		if mb.in, err = mb.cmd.StdinPipe(); err != nil {
			return f, err
		}
		out, err := mb.cmd.StdoutPipe()
		if err != nil {
			return f, err
		}
		mb.out = bufio.NewReader(out)
		if err := mb.cmd.Start(); err != nil {
			return f, fmt.Errorf("scenario: starting a fleet member: %w", err)
		}
		f.members = append(f.members, mb)
	}
	for _, mb := range f.members {
		if line, err := mb.out.ReadString('\n'); err != nil || line != "ready\n" {
			return f, mb.failed(fmt.Errorf("said %q before its start: %v", line, err))
		}
	}
	return f, nil
}

// run gives every member its start and returns their results.
func (f *fleetProcs) run(start time.Time) ([]MemberResult, error) {
	at := strconv.FormatInt(start.UnixNano(), 10) + "\n"
	for _, mb := range f.members {
		if _, err := io.WriteString(mb.in, at); err != nil {
			return nil, mb.failed(err)
		}
		mb.in.Close()
	}
	out := make([]MemberResult, len(f.members))
	for i, mb := range f.members {
		if err := json.NewDecoder(mb.out).Decode(&out[i]); err != nil {
			return nil, mb.failed(fmt.Errorf("reading its result: %w", err))
		}
		mb.done = true
		if err := mb.cmd.Wait(); err != nil {
			return nil, mb.failed(err)
		}
	}
	return out, nil
}

// stop kills the members not yet waited for and waits for them.
func (f *fleetProcs) stop() {
	for _, mb := range f.members {
		mb.stop()
	}
}

// stop kills mb unless it was waited for, and waits for it.
func (mb *member) stop() {
	if !mb.done {
		mb.done = true
		_ = mb.cmd.Process.Kill()
		_ = mb.cmd.Wait()
	}
}

// failed stops mb and returns err as its failure, with what it wrote to
// stderr.
func (mb *member) failed(err error) error {
	mb.stop()
	msg := strings.TrimSpace(mb.stderr.String())
	if len(msg) > 2000 {
		msg = msg[:2000] + "..."
	}
	return fmt.Errorf("scenario: fleet member %s: %w; its stderr: %q", mb.id, err, msg)
}

// openLoop sends rate GETs a second through cl to url for length from
// start, each started at its time on a goroutine of its own whatever the
// others are doing, each with a deadline of timeout, and returns what they
// got. It stops starting requests once ctx is done.
func openLoop(ctx context.Context, cl *http.Client, url, prefix string, rate int, length, timeout time.Duration, start time.Time) MemberResult {
	n := int(length.Seconds() * float64(rate))
	gap := time.Second / time.Duration(rate)
	type result struct {
		Outcome
		deadline bool
	}
	out := make([]result, 0, n)
	var mu sync.Mutex
	var wg sync.WaitGroup
	timer := time.NewTimer(0)
	defer timer.Stop()
	for i := range n {
		// Waiting for each request's time paces the offered load; it
		// synchronises nothing.
		timer.Reset(time.Until(start.Add(time.Duration(i) * gap)))
		select {
		case <-ctx.Done():
		case <-timer.C:
		}
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() {
			rctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			o := Send(rctx, cl, http.MethodGet, url+"/v1/items", id(prefix, i), "", nil, false)
			mu.Lock()
			defer mu.Unlock()
			out = append(out, result{o, o.Err != nil && errors.Is(rctx.Err(), context.DeadlineExceeded)})
		})
	}
	wg.Wait()
	r := MemberResult{Requests: len(out)}
	for _, o := range out {
		switch {
		case o.OK:
			r.OK++
			r.Waits = append(r.Waits, o.Latency)
		case errors.Is(o.Err, pace.ErrWaitTooLong):
			r.Paced++
		case o.deadline:
			r.Deadline++
		case o.Err == nil && o.Status == http.StatusTooManyRequests:
			r.Got429++
		default:
			r.Failed++
		}
	}
	return r
}

// storeWatch is a go-redis hook that times every command the PaceStore
// sends and tells those sent from a request's goroutine: the only way a
// request could be held waiting on Redis. Exchanges run on a goroutine of
// the Transport's own, so that none should be.
type storeWatch struct {
	mu            sync.Mutex
	took          []time.Duration
	errs          int
	onRequestPath int
	inRequests    time.Duration
}

func (w *storeWatch) DialHook(next redis.DialHook) redis.DialHook { return next }

func (w *storeWatch) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (w *storeWatch) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		start := time.Now()
		err := next(ctx, cmd)
		took := time.Since(start)
		onPath := underRoundTrip()
		w.mu.Lock()
		defer w.mu.Unlock()
		if name := cmd.Name(); name == "evalsha" || name == "eval" {
			// An exchange; the others are go-redis's own, on a new
			// connection, or the script's load.
			w.took = append(w.took, took)
			if err != nil {
				w.errs++
			}
		}
		if onPath {
			w.onRequestPath++
			w.inRequests += took
		}
		return err
	}
}

// into copies what w saw into r.
func (w *storeWatch) into(r *MemberResult) {
	w.mu.Lock()
	defer w.mu.Unlock()
	r.Exchanges = slices.Clone(w.took)
	r.ExchangeErrs, r.OnRequestPath, r.InRequests = w.errs, w.onRequestPath, w.inRequests
}

// underRoundTrip reports whether the calling goroutine runs under a
// RoundTrip: a request's goroutine, in net/http's Client or in a
// Transport. The standard library gives no other way to tell whose
// goroutine this is than its stack, read up to the line naming the
// goroutine that created it.
func underRoundTrip() bool {
	buf := make([]byte, 8<<10)
	n := runtime.Stack(buf, false)
	for n == len(buf) && len(buf) < 1<<20 { // cut short: read it whole
		buf = make([]byte, 2*len(buf))
		n = runtime.Stack(buf, false)
	}
	stack, _, _ := strings.Cut(string(buf[:n]), "\ncreated by ")
	return strings.Contains(stack, ".RoundTrip(") || strings.Contains(stack, "net/http.(*Client).")
}
