package redisbudget

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/retryhttp/retryhttp/redisbudget/internal/redisserver"
	"github.com/retryhttp/retryhttp/throttle"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// faultTimeout is the timeout of the fault tests: long enough that a busy
// machine under -race answers a healthy Redis within it.
const faultTimeout = 200 * time.Millisecond

// lockedBuffer is a log that a test reads while a store writes it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestThrottleStoreFaults checks that an exchange with a Redis that is
// down, hung, a read-only replica, out of memory, or without the script and
// not allowed EVAL returns an error within the timeout; that Status and the
// log say so once; and that exchanges succeed again once Redis is mended.
func TestThrottleStoreFaults(t *testing.T) {
	tests := []struct {
		name string
		// start makes s fail; mend makes it well again. other is a second
		// server, whose replica s may become.
		start, mend func(t *testing.T, s, other *redisserver.Server)
		// user, if set, is the ACL user the store's client logs in as.
		user string
		// is reports whether err is the fault's.
		is func(err error) bool
		// readable reports that an exchange with no counts to add
		// succeeds during the fault.
		readable bool
	}{
		{
			name:  "down",
			start: func(t *testing.T, s, _ *redisserver.Server) { s.Kill() },
			mend:  func(t *testing.T, s, _ *redisserver.Server) { require.NoError(t, s.Restart()) },
			// Refused, or not answered within the timeout while go-redis
			// retries the dial.
			is: func(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, errTimeout) },
		},
		{
			name:  "hung",
			start: func(t *testing.T, s, _ *redisserver.Server) { require.NoError(t, s.Pause()) },
			mend:  func(t *testing.T, s, _ *redisserver.Server) { require.NoError(t, s.Resume()) },
			is:    func(err error) bool { return errors.Is(err, errTimeout) },
		},
		{
			name: "read-only replica",
			start: func(t *testing.T, s, primary *redisserver.Server) {
				command(t, s, "REPLICAOF", "127.0.0.1", strconv.Itoa(primary.Port))
			},
			mend: func(t *testing.T, s, _ *redisserver.Server) { command(t, s, "REPLICAOF", "NO", "ONE") },
			is:   func(err error) bool { return redis.HasErrorPrefix(err, "READONLY") },
		},
		{
			name: "maxmemory with noeviction",
			start: func(t *testing.T, s, _ *redisserver.Server) {
				command(t, s, "CONFIG", "SET", "maxmemory-policy", "noeviction")
				command(t, s, "CONFIG", "SET", "maxmemory", "1")
			},
			mend: func(t *testing.T, s, _ *redisserver.Server) { command(t, s, "CONFIG", "SET", "maxmemory", "0") },
			is:   func(err error) bool { return redis.HasErrorPrefix(err, "OOM") },
			// Its writes only delete or shorten.
			readable: true,
		},
		{
			// A user allowed EVALSHA but not EVAL meets NOSCRIPT once Redis
			// has lost the script, and cannot send it again.
			name:  "NOSCRIPT, EVAL not allowed",
			user:  "evalsha-only",
			start: func(t *testing.T, s, _ *redisserver.Server) { command(t, s, "SCRIPT", "FLUSH") },
			mend:  func(t *testing.T, s, _ *redisserver.Server) { loadExchange(t, s) },
			is:    func(err error) bool { return redis.HasErrorPrefix(err, "NOPERM") },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, other := startRedis(t), startRedis(t)
			opts := &redis.Options{Addr: s.Addr}
			if tt.user != "" {
				command(t, s, "ACL", "SETUSER", tt.user, "on", ">secret", "~*", "&*", "+@all", "-eval")
				opts.Username, opts.Password = tt.user, "secret"
			}
			c := redis.NewClient(opts)
			t.Cleanup(func() { c.Close() })
			var log lockedBuffer
			clock := newTestClock()
			ts := NewThrottleStore(c, "faults", withClock(clock), WithTimeout(faultTimeout),
				WithLogger(slog.New(slog.NewTextHandler(&log, nil))))
			loadExchange(t, s)
			batch := []throttle.Counts{counts("api.example", 3, 1, 0)}
			_, err := ts.Exchange(context.Background(), testWindow, batch)
			require.NoError(t, err)

			tt.start(t, s, other)
			var longest time.Duration
			for range 3 {
				start := time.Now()
				got, err := ts.Exchange(context.Background(), testWindow, batch)
				elapsed := time.Since(start)
				longest = max(longest, elapsed)
				require.Error(t, err)
				assert.True(t, tt.is(err), "%v", err)
				assert.Nil(t, got)
				assert.LessOrEqual(t, elapsed, faultTimeout+slack)
				st := ts.Status()
				assert.False(t, st.Shared)
				assert.Equal(t, err, st.LastError)
				assert.Equal(t, clock.now(), st.LastErrorAt)
			}
			assert.Equal(t, 1, strings.Count(log.String(), "level=WARN"), "%s", log.String())
			backs := 1 // the returns to sharing the log tells
			if tt.readable {
				clock.advance(testStep) // the host is brought to a new step
				got, err := ts.Exchange(context.Background(), testWindow, nil)
				require.NoError(t, err)
				assert.Equal(t, []throttle.Counts{counts("api.example", 3, 1, 0)}, got)
				assert.True(t, ts.Status().Shared)
				_, err = ts.Exchange(context.Background(), testWindow, batch)
				require.True(t, tt.is(err), "%v", err)
				assert.False(t, ts.Status().Shared)
				backs++
			}
			t.Logf("longest wait for a failing exchange: %v (timeout %v); %v", longest, faultTimeout, ts.Status().LastError)

			tt.mend(t, s, other)
			clock.advance(time.Second)
			// A restarted Redis leaves the client's pool with connections
			// the kill broke: the first exchanges may meet them.
			for i := 0; ; i++ {
				_, err = ts.Exchange(context.Background(), testWindow, nil)
				if err == nil || i == 5 {
					break
				}
			}
			require.NoError(t, err)
			st := ts.Status()
			assert.True(t, st.Shared)
			assert.Equal(t, clock.now(), st.Since)
			assert.Equal(t, backs, strings.Count(log.String(), "level=INFO"), "%s", log.String())
		})
	}
}

// loadExchange loads the exchange script into s as its administrator.
func loadExchange(t *testing.T, s *redisserver.Server) {
	t.Helper()
	require.NoError(t, exchangeScript.Load(context.Background(), newClient(t, s)).Err())
}

// TestThrottleStoreCallerGivesUp checks that an exchange whose caller
// gives up returns at once, and is not taken for Redis failing.
func TestThrottleStoreCallerGivesUp(t *testing.T) {
	s := startRedis(t)
	ts := NewThrottleStore(newClient(t, s), "gives-up", WithTimeout(time.Hour))
	_, err := ts.Exchange(context.Background(), testWindow, nil) // connects, loads the script
	require.NoError(t, err)
	require.NoError(t, s.Pause())
	t.Cleanup(func() { s.Resume() })

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := ts.Exchange(ctx, testWindow, []throttle.Counts{counts("api.example", 1, 0, 0)})
		done <- err
	}()
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	assert.True(t, ts.Status().Shared, "a caller giving up taken for Redis failing")
	assert.NoError(t, ts.Status().LastError)
}

// blockHook holds every command until release is closed, whatever its
// context says: a client that waits on a hung Redis for longer than the
// store does.
type blockHook struct{ release chan struct{} }

func (h blockHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h blockHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		<-h.release
		return next(ctx, cmd)
	}
}

func (h blockHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestThrottleStoreBoundsOutstandingScripts checks that, with a client
// that does not give up, exchanges stop waiting at the timeout, and that
// past maxInflight scripts left running an exchange fails at once.
func TestThrottleStoreBoundsOutstandingScripts(t *testing.T) {
	s := startRedis(t)
	c := newClient(t, s)
	release := make(chan struct{})
	c.AddHook(blockHook{release})
	ts := NewThrottleStore(c, "outstanding", WithTimeout(time.Millisecond))
	for range maxInflight {
		_, err := ts.Exchange(context.Background(), testWindow, nil)
		require.ErrorIs(t, err, errTimeout)
	}
	start := time.Now()
	_, err := ts.Exchange(context.Background(), testWindow, nil)
	require.ErrorIs(t, err, errBusy)
	assert.Less(t, time.Since(start), slack, "waited with no room for a script")
	close(release)
}

// TestThrottleStoreCluster checks, on a 3-node Redis Cluster, that every
// key of a name is on one node, whatever its hosts and windows, that two
// processes share their sums there, and that a client that does not follow
// the cluster's redirections gets an error from the nodes that do not hold
// the name (MOVED) within the timeout.
func TestThrottleStoreCluster(t *testing.T) {
	nodes, cc := startCluster(t)
	ctx := context.Background()
	clock := newTestClock()
	names := []string{"payments-api", "search", "}starts-with-a-brace", "{braced}"}
	for _, name := range names {
		a := NewThrottleStore(cc, name, withClock(clock), WithTimeout(time.Second))
		b := NewThrottleStore(cc, name, withClock(clock), WithTimeout(time.Second))
		var batch []throttle.Counts
		for i := range 50 {
			batch = append(batch, counts(fmt.Sprintf("h%d.example", i), 2, 1, 0))
		}
		exchange(t, a, batch...)
		_, err := b.Exchange(ctx, testWindow/2, batch[:1])
		require.NoError(t, err)
		got := exchange(t, b, batch...)
		require.Len(t, got, 50)
		for _, c := range got {
			require.Equal(t, counts(c.Host, 4, 2, 0), c)
		}

		// The name's four keys (two windows) are on one node.
		var holders []string
		for _, n := range nodes {
			keys := newClient(t, n).Keys(ctx, "{retryhttp:throttle:"+name+"}*").Val()
			if len(keys) > 0 {
				assert.Len(t, keys, 4, "%s on %s", name, n.Addr)
				holders = append(holders, n.Addr)
			}
		}
		assert.Len(t, holders, 1, "%s's keys", name)

		// One node holds the name; the others redirect a client of theirs.
		var moved int
		for _, n := range nodes {
			ts := NewThrottleStore(newClient(t, n), name, withClock(clock), WithTimeout(faultTimeout))
			start := time.Now()
			_, err := ts.Exchange(ctx, testWindow, batch[:1])
			assert.LessOrEqual(t, time.Since(start), faultTimeout+slack)
			if err != nil {
				assert.True(t, redis.HasErrorPrefix(err, "MOVED"), "%v", err)
				assert.False(t, ts.Status().Shared)
				moved++
			}
		}
		assert.Equal(t, 2, moved, "%s: nodes that redirected", name)
	}
}
