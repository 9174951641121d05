package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/budget"
	"github.com/retryhttp/retryhttp/classify"
	"github.com/retryhttp/retryhttp/redisbudget"
)

// A job is what one client process does: send requests GETs to url at the
// given concurrency, each worker waiting pace between its requests, with a
// local budget or a shared one named name.
type job struct {
	URL         string
	Redis       string // address; empty for a local budget
	Name        string
	Processes   int // what the shared budget is told to expect
	Requests    int
	Concurrency int
	Pace        time.Duration
}

// A report is what a client process found.
type report struct {
	Requests    int64
	Errors      int64            // requests that ended in an error rather than a response
	Statuses    map[int]int64    // final statuses
	Retries     int64            // retries the Transport made
	MaxWithdraw time.Duration    // the longest a retry waited for the budget
	Commands    map[string]int64 // Redis commands: "take", "refund", "probe", other names
	Shared      []transition     // moves between Redis and the fallback
}

// A transition is a move of the shared budget to Redis (Shared) or to its
// fallback, at a Unix time in nanoseconds.
type transition struct {
	At     int64
	Shared bool
}

// childMain runs one client process: it reads its job from the flags and
// writes its report to standard output as JSON.
func childMain(args []string) error {
	var j job
	fs := flag.NewFlagSet("child", flag.ContinueOnError)
	fs.StringVar(&j.URL, "url", "", "")
	fs.StringVar(&j.Redis, "redis", "", "")
	fs.StringVar(&j.Name, "name", "", "")
	fs.IntVar(&j.Processes, "processes", 1, "")
	fs.IntVar(&j.Requests, "requests", 0, "")
	fs.IntVar(&j.Concurrency, "concurrency", 1, "")
	fs.DurationVar(&j.Pace, "pace", 0, "")
	if err := fs.Parse(args); err != nil {
		return err
	}
	r, err := j.run()
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(r)
}

func (j job) run() (*report, error) {
	r := &report{Statuses: map[int]int64{}, Commands: map[string]int64{}}
	var cmds commandCounter
	var budget budget.Budget = budget.NewPerHost()
	var shared *redisbudget.Budget
	if j.Redis != "" {
		client := redis.NewClient(&redis.Options{Addr: j.Redis})
		defer client.Close()
		client.AddHook(&cmds)
		shared = redisbudget.New(client, j.Name, redisbudget.WithProcesses(j.Processes))
		budget = shared
	}
	timed := &timedBudget{Budget: budget}
	var retries atomic.Int64
	tr := retryhttp.New(retryhttp.WithBudget(timed), retryhttp.WithAttemptHeader(attemptHeader),
		retryhttp.WithOnRetry(func(retryhttp.RetryEvent) { retries.Add(1) }))
	defer tr.CloseIdleConnections()

	// Watch the shared budget move between Redis and its fallback.
	stop := make(chan struct{})
	var watching sync.WaitGroup
	if shared != nil {
		watching.Go(func() {
			last := true
			tick := time.NewTicker(5 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
				}
				if st := shared.Status(); st.Shared != last {
					last = st.Shared
					r.Shared = append(r.Shared, transition{At: st.Since.UnixNano(), Shared: st.Shared})
				}
			}
		})
	}

	var (
		next   atomic.Int64
		mu     sync.Mutex
		errs   atomic.Int64
		counts = map[int]int64{}
	)
	var wg sync.WaitGroup
	for range j.Concurrency {
		wg.Go(func() {
			for next.Add(1) <= int64(j.Requests) {
				req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, j.URL, nil)
				resp, err := tr.RoundTrip(req)
				if err != nil {
					errs.Add(1)
				} else {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					mu.Lock()
					counts[resp.StatusCode]++
					mu.Unlock()
				}
				if j.Pace > 0 {
					time.Sleep(j.Pace) // pacing the traffic, as a real client would
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	watching.Wait()
	if shared != nil {
		if err := shared.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "fleet: closing the budget:", err)
		}
	}
	r.Requests = int64(j.Requests)
	r.Errors = errs.Load()
	r.Statuses = counts
	r.Retries = retries.Load()
	r.MaxWithdraw = timed.longest()
	r.Commands = cmds.snapshot()
	return r, nil
}

// timedBudget records the longest Withdraw of the budget it wraps.
type timedBudget struct {
	budget.Budget

	max atomic.Int64
}

func (t *timedBudget) Withdraw(req *http.Request, v classify.Verdict) (budget.Millitokens, error) {
	start := time.Now()
	took, err := t.Budget.Withdraw(req, v)
	d := int64(time.Since(start))
	for cur := t.max.Load(); d > cur && !t.max.CompareAndSwap(cur, d); cur = t.max.Load() {
	}
	return took, err
}

func (t *timedBudget) longest() time.Duration { return time.Duration(t.max.Load()) }

// commandCounter is a go-redis hook that counts the commands sent, telling
// the budget's two scripts apart by their replies: take answers a pair,
// refund a number.
type commandCounter struct {
	mu sync.Mutex
	n  map[string]int64
}

func (c *commandCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *commandCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		name := cmd.Name()
		if sc, ok := cmd.(*redis.Cmd); ok && (name == "evalsha" || name == "eval") {
			switch sc.Val().(type) {
			case []any:
				name = "take"
			case int64:
				name = "refund"
			case string:
				name = "probe"
			}
		}
		c.mu.Lock()
		if c.n == nil {
			c.n = map[string]int64{}
		}
		c.n[name]++
		c.mu.Unlock()
		return err
	}
}

func (c *commandCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (c *commandCounter) snapshot() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int64{}
	for k, v := range c.n {
		out[k] = v
	}
	return out
}
