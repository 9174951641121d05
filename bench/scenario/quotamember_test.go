package scenario

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var fleetMember = flag.String(FleetMemberFlag, "", "internal: run one member of a quota fleet run")

// TestMain runs the test binary as a member of a quota fleet run when the
// fleet starts it so, as the scenarios command runs itself, and the tests
// otherwise.
func TestMain(m *testing.M) {
	flag.Parse()
	if *fleetMember != "" {
		if err := RunFleetMember(*fleetMember, os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "quota fleet member:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// roundTripFunc is an http.RoundTripper that calls itself.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestStoreWatchTellsARequestsGoroutine checks the fleet's measure of a
// request held waiting on Redis against a real redis-server: a command
// sent from under a RoundTrip counts, with its time, and one from a
// goroutine of its own, even one a RoundTrip started, does not.
func TestStoreWatchTellsARequestsGoroutine(t *testing.T) {
	rds := startRedis(t)
	rdb := redis.NewClient(&redis.Options{Addr: rds.Addr})
	t.Cleanup(func() { rdb.Close() })
	w := &storeWatch{}
	rdb.AddHook(w)
	script := func() { require.NoError(t, rdb.Eval(context.Background(), "return 1", nil).Err()) }

	script()
	done := make(chan struct{})
	rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		script()
		go func() { // as a Transport's own goroutine would
			defer close(done)
			script()
		}()
		return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: r}, nil
	})
	resp, err := (&http.Client{Transport: rt}).Get("http://127.0.0.1/")
	require.NoError(t, err)
	resp.Body.Close()
	<-done

	var r MemberResult
	w.into(&r)
	assert.Len(t, r.Exchanges, 3, "scripts timed")
	assert.Equal(t, 1, r.OnRequestPath, "commands sent under a RoundTrip")
	assert.Positive(t, r.InRequests, "their time")
	assert.Zero(t, r.ExchangeErrs)
}

// startRedis starts a redis-server for t, failing it, never skipping,
// when none is installed.
func startRedis(t *testing.T) *Redis {
	t.Helper()
	rds, err := StartRedis(t.TempDir())
	require.NoError(t, err, "redis-server must be on the PATH: install it (apt-get install redis-server; the CI does)")
	t.Cleanup(rds.Kill)
	return rds
}

// TestFleetReportsAMemberThatFails starts members whose job they refuse:
// the fleet does not wait for them, and its error names the member and
// says what it wrote to stderr.
func TestFleetReportsAMemberThatFails(t *testing.T) {
	m := FleetMember{URL: "http://127.0.0.1:1", Length: time.Second, Timeout: time.Second} // no rate
	f, err := startFleet(context.Background(), os.Args[0], m, 2)
	f.stop()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "fleet member p0-")
	assert.Contains(t, err.Error(), "needs a URL, a rate")
}
