package redisbudget_test

import (
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/retryhttp/retryhttp"
	"github.com/retryhttp/retryhttp/budget"
	"github.com/retryhttp/retryhttp/redisbudget"
	"github.com/retryhttp/retryhttp/throttle"
)

// Every process of a service passes its Redis client and the same budget
// name; together they spend one bucket of retries per host.
func Example() {
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	defer rdb.Close()

	budget := redisbudget.New(rdb, "payments-api",
		redisbudget.WithProcesses(10), // while Redis is down, each process gets 500/10 tokens per host
		redisbudget.WithLogger(slog.Default()),
	)
	defer budget.Close() // sends the refunds still held

	client := &http.Client{Transport: retryhttp.New(retryhttp.WithBudget(budget))}
	_ = client
}

// A budget with retryhttp's bucket options, a Redis Cluster, and a shorter
// timeout.
func ExampleNew_cluster() {
	rdb := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: []string{"10.0.0.1:6379", "10.0.0.2:6379", "10.0.0.3:6379"},
		// Short client timeouts free connections sooner when a node hangs;
		// the budget waits no longer than its own timeout in any case.
		ReadTimeout:  100 * time.Millisecond,
		WriteTimeout: 100 * time.Millisecond,
	})
	defer rdb.Close()
	budget := redisbudget.New(rdb, "search",
		redisbudget.WithBucket(budget.Capacity(1000), budget.Refund(0.5)),
		redisbudget.WithTimeout(20*time.Millisecond),
	)
	defer budget.Close()
	_ = retryhttp.New(retryhttp.WithBudget(budget))
}

// Status tells whether retries are paid from Redis or from the fallback.
func ExampleBudget_Status() {
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	defer rdb.Close()
	budget := redisbudget.New(rdb, "payments-api")
	defer budget.Close()
	if st := budget.Status(); !st.Shared {
		fmt.Println("on the fallback since", st.Since, "after", st.LastError)
	}
}

// Every process of a service passes its Redis client and the same name;
// together they refuse requests to a failing host as one process sending
// all of their requests would.
func ExampleNewThrottleStore() {
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	defer rdb.Close()

	store := redisbudget.NewThrottleStore(rdb, "payments-api",
		redisbudget.WithTimeout(100*time.Millisecond), // an exchange waits no longer; it is off the request path
		redisbudget.WithLogger(slog.Default()),
	)
	client := &http.Client{Transport: retryhttp.New(
		retryhttp.WithAdaptiveThrottling(throttle.Shared(store)),
	)}
	_ = client
}
