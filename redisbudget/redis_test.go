package redisbudget

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/budget"
	"github.com/retryhttp/retryhttp/redisbudget/internal/redisserver"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// needTool fails the test, saying how to install it, if the named program
// is not on the PATH: these tests need a real Redis and never skip.
func needTool(t testing.TB, name string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		t.Fatal(name + " not found on PATH; install it (apt-get install redis-server) to run this test")
	}
}

// startRedis starts a redis-server for the test, stopped when it ends.
func startRedis(t testing.TB, extra ...string) *redisserver.Server {
	t.Helper()
	needTool(t, "redis-server")
	s, err := redisserver.Start(t.TempDir(), extra...)
	require.NoError(t, err)
	t.Cleanup(s.Close)
	return s
}

// newClient returns a client of s with go-redis's defaults, closed when the
// test ends.
func newClient(t testing.TB, s *redisserver.Server) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: s.Addr})
	t.Cleanup(func() { c.Close() })
	return c
}

// newRedisBudget returns a Budget closed when the test ends.
func newRedisBudget(t testing.TB, c redis.UniversalClient, name string, opts ...Option) *Budget {
	b := New(c, name, opts...)
	t.Cleanup(func() { b.Close() })
	return b
}

// slack is what a wall-clock bound allows for scheduling under -race on a
// busy machine.
const slack = 150 * time.Millisecond

func TestRedisSharedBucket(t *testing.T) {
	s := startRedis(t)
	ctx := context.Background()
	budgets := []*Budget{
		newRedisBudget(t, newClient(t, s), "shared", WithEmptyHold(0), WithTimeout(time.Second)),
		newRedisBudget(t, newClient(t, s), "shared", WithEmptyHold(0), WithTimeout(time.Second)),
	}
	req := getReq(t, "https://api.example/items")
	var took atomic.Int64
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			for range 20 {
				if _, err := budgets[i%2].Withdraw(req, failed); err == nil {
					took.Add(1)
				} else {
					assert.ErrorIs(t, err, retryhttp.ErrBudgetExhausted)
				}
			}
		})
	}
	wg.Wait()
	assert.Equal(t, int64(100), took.Load(), "two budgets of one name share one bucket")
	rdb := newClient(t, s)
	key := "retryhttp:budget:shared:https://api.example"
	assert.Equal(t, "0", rdb.Get(ctx, key).Val())
	ttl := rdb.PTTL(ctx, key).Val()
	assert.Greater(t, ttl, time.Duration(0))
	assert.LessOrEqual(t, ttl, DefaultKeyTTL)

	// Another name, another bucket; another host, another bucket.
	other := newRedisBudget(t, newClient(t, s), "other", WithTimeout(time.Second))
	_, err := other.Withdraw(req, failed)
	require.NoError(t, err)
	_, err = budgets[0].Withdraw(getReq(t, "https://b.example/"), failed)
	require.NoError(t, err)

	// Refunds are sent by Flush; a bucket that fills is deleted.
	for range 50 {
		budgets[0].Deposit(req, 0)
	}
	require.NoError(t, budgets[0].Flush())
	assert.Equal(t, "50000", rdb.Get(ctx, key).Val())
	bal, err := budgets[1].Balance(ctx, req.URL)
	require.NoError(t, err)
	assert.Equal(t, 50*budget.Token, bal)
	for range 9 {
		budgets[1].Deposit(req, 50*budget.Token) // as if costly retries succeeded
	}
	require.NoError(t, budgets[1].Close())
	assert.Zero(t, rdb.Exists(ctx, key).Val(), "a full bucket is no key")
}

func TestRedisKilledAndRestarted(t *testing.T) {
	s := startRedis(t)
	b := newRedisBudget(t, newClient(t, s), "failover", WithProcesses(50), WithProbeInterval(time.Hour))
	req := getReq(t, "https://api.example/")
	_, err := b.Withdraw(req, failed)
	require.NoError(t, err)

	s.Kill()
	start := time.Now()
	took, err := b.Withdraw(req, failed)
	require.NoError(t, err, "a down Redis falls back, and the fallback pays")
	assert.Equal(t, 5*budget.Token, took)
	assert.Less(t, time.Since(start), DefaultTimeout+slack)
	// go-redis retries a refused dial for a while: the budget moves to its
	// fallback when go-redis gives up, or after four timeouts of silence.
	waitFallback(t, b)
	require.Error(t, b.Status().LastError)
	// The fallback holds 500/50 = 10 tokens: one more retry.
	_, err = b.Withdraw(req, failed)
	require.NoError(t, err)
	_, err = b.Withdraw(req, failed)
	require.ErrorIs(t, err, retryhttp.ErrBudgetExhausted)

	// A probe while Redis is down keeps the fallback.
	b.probe()
	require.False(t, b.Status().Shared)

	require.NoError(t, s.Restart())
	b.probe()
	require.True(t, b.Status().Shared)
	// The restarted Redis has lost the bucket and the scripts; the budget
	// loads them again.
	took, err = b.Withdraw(req, failed)
	require.NoError(t, err)
	assert.Equal(t, 5*budget.Token, took)
	bal, err := b.Balance(context.Background(), req.URL)
	require.NoError(t, err)
	assert.Equal(t, 495*budget.Token, bal)
}

func TestRedisHung(t *testing.T) {
	s := startRedis(t)
	b := newRedisBudget(t, newClient(t, s), "hung", WithTimeout(20*time.Millisecond), WithProbeInterval(time.Hour))
	req := getReq(t, "https://api.example/")
	_, err := b.Withdraw(req, failed) // connects and loads the script
	require.NoError(t, err)

	require.NoError(t, s.Pause())
	t.Cleanup(func() { s.Resume() })
	start := time.Now()
	_, err = b.Withdraw(req, failed)
	require.NoError(t, err)
	assert.Less(t, time.Since(start), 20*time.Millisecond+slack, "a hung Redis held the retry")
	waitFallback(t, b)
	require.ErrorIs(t, b.Status().LastError, errTimeout)

	require.NoError(t, s.Resume())
	b.probe()
	require.True(t, b.Status().Shared)
}

// waitFallback waits, boundedly, for b to move to its fallback after the
// redis-server was killed or paused.
func waitFallback(t *testing.T, b *Budget) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for b.Status().Shared {
		require.True(t, time.Now().Before(deadline), "the budget did not fall back")
		time.Sleep(10 * time.Millisecond) // waiting on the redis-server process and go-redis
	}
}

// stormEnv names the Redis address a storm worker process uses; the
// worker is this test binary, run with -test.run=TestStormWorker.
const stormEnv = "REDISBUDGET_STORM_ADDR"

// TestMain lets the test binary serve as a storm worker process of
// TestRedisStormFromProcesses, when that test starts it with stormEnv set.
func TestMain(m *testing.M) {
	if addr := os.Getenv(stormEnv); addr != "" {
		if err := stormWorker(addr); err != nil {
			fmt.Fprintln(os.Stderr, "storm worker:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// stormWorker is one process of TestRedisStormFromProcesses. It withdraws
// from one shared bucket from 8 goroutines, prints how many retries it was
// granted, and, once told to on its standard input (when every process has
// printed), refunds half of them and exits.
func stormWorker(addr string) error {
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	b := New(c, "storm", WithEmptyHold(0), WithTimeout(time.Second))
	req, err := http.NewRequest(http.MethodGet, "https://api.example/", nil)
	if err != nil {
		return err
	}
	var took atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 40 {
				if _, err := b.Withdraw(req, failed); err == nil {
					took.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if st := b.Status(); !st.Shared {
		return fmt.Errorf("not on the shared budget: %v", st.LastError)
	}
	fmt.Printf("took %d\n", took.Load())
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		return err
	}
	for range took.Load() / 2 {
		b.Deposit(req, 5*budget.Token)
	}
	return b.Close()
}

func TestRedisStormFromProcesses(t *testing.T) {
	s := startRedis(t)
	rdb := newClient(t, s)
	ctx := context.Background()
	key := "retryhttp:budget:storm:https://api.example"
	const procs = 4

	// Watch the balance while the processes run.
	stop := make(chan struct{})
	var watched sync.WaitGroup
	var readings atomic.Int64
	watched.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			v, err := rdb.Get(ctx, key).Result()
			if errors.Is(err, redis.Nil) {
				continue
			}
			if !assert.NoError(t, err) {
				return
			}
			n, err := strconv.Atoi(v)
			if !assert.NoError(t, err) {
				return
			}
			readings.Add(1)
			assert.GreaterOrEqual(t, n, 0)
			assert.LessOrEqual(t, n, 500_000)
		}
	})

	cmds := make([]*exec.Cmd, procs)
	stdins := make([]io.WriteCloser, procs)
	stdouts := make([]*bufio.Scanner, procs)
	for i := range cmds {
		cmds[i] = exec.Command(os.Args[0])
		cmds[i].Env = append(os.Environ(), stormEnv+"="+s.Addr)
		cmds[i].Stderr = os.Stderr
		var err error
		stdins[i], err = cmds[i].StdinPipe()
		require.NoError(t, err)
		out, err := cmds[i].StdoutPipe()
		require.NoError(t, err)
		stdouts[i] = bufio.NewScanner(out)
		require.NoError(t, cmds[i].Start())
		t.Cleanup(func() { cmds[i].Process.Kill() })
	}
	var total, refunded int
	for i := range cmds {
		n := -1
		for n < 0 && stdouts[i].Scan() {
			fmt.Sscanf(stdouts[i].Text(), "took %d", &n)
		}
		require.GreaterOrEqual(t, n, 0, "worker %d printed no count", i)
		total += n
		refunded += n / 2
	}
	// Every process has withdrawn; now they refund.
	for i, cmd := range cmds {
		_, err := io.WriteString(stdins[i], "refund\n")
		require.NoError(t, err)
		for stdouts[i].Scan() { // whatever else it prints
		}
		require.NoError(t, cmd.Wait(), "worker %d", i)
	}
	close(stop)
	watched.Wait()
	t.Logf("%d processes took %d retries, refunded %d; %d readings of the balance", procs, total, refunded, readings.Load())
	assert.Equal(t, 100, total, "the processes together took exactly one bucket")
	assert.Equal(t, strconv.Itoa(refunded*5000), rdb.Get(ctx, key).Val())
}

// startCluster starts a Redis Cluster of three primaries for the test,
// stopped when it ends, and returns its nodes and a client of it.
func startCluster(t *testing.T) ([]*redisserver.Server, *redis.ClusterClient) {
	t.Helper()
	needTool(t, "redis-cli")
	var nodes []*redisserver.Server
	var addrs []string
	for range 3 {
		n := startRedis(t, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", "5000")
		nodes = append(nodes, n)
		addrs = append(addrs, n.Addr)
	}
	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	out, err := exec.Command("redis-cli", args...).CombinedOutput()
	require.NoError(t, err, "%s", out)
	// Wait, boundedly, for every node to see the cluster as up.
	deadline := time.Now().Add(15 * time.Second)
	for _, n := range nodes {
		c := newClient(t, n)
		for !strings.Contains(c.ClusterInfo(context.Background()).Val(), "cluster_state:ok") {
			require.True(t, time.Now().Before(deadline), "cluster did not come up")
			time.Sleep(20 * time.Millisecond) // waiting on the redis-server processes
		}
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	t.Cleanup(func() { cc.Close() })
	return nodes, cc
}

func TestRedisCluster(t *testing.T) {
	nodes, cc := startCluster(t)
	ctx := context.Background()
	b := newRedisBudget(t, cc, "cluster", WithTimeout(time.Second))
	const hosts = 300
	for i := range hosts {
		req := getReq(t, fmt.Sprintf("https://h%d.example/", i))
		for range 3 {
			_, err := b.Withdraw(req, timedOut)
			require.NoError(t, err)
		}
		b.Deposit(req, 10*budget.Token)
	}
	require.True(t, b.Status().Shared, "%v", b.Status().LastError)
	require.NoError(t, b.Flush())

	// Every node holds some of the buckets, and each bucket is right.
	total := int64(0)
	for _, n := range nodes {
		size := newClient(t, n).DBSize(ctx).Val()
		assert.Positive(t, size, "node %s holds no bucket", n.Addr)
		total += size
	}
	assert.Equal(t, int64(hosts), total)
	for i := range hosts {
		u := getReq(t, fmt.Sprintf("https://h%d.example/", i)).URL
		bal, err := b.Balance(ctx, u)
		require.NoError(t, err)
		require.Equal(t, 480*budget.Token, bal, "host %d", i)
	}
}
