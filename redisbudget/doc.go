// Package redisbudget is a retry budget for retryhttp that a fleet of
// processes shares through Redis: one token bucket per destination, whichever
// process retries.
//
// retryhttp's own per-host budget keeps a failing dependency at about one
// request per request, but only inside one process: ten replicas start with
// ten full buckets, and a fleet that keeps starting new processes brings a
// full bucket with each of them. A Budget keeps each bucket's balance in
// Redis instead, so every process that names the same budget draws from the
// same buckets:
//
//	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"}) // or a Cluster or Sentinel client
//	budget := redisbudget.New(rdb, "payments-api", redisbudget.WithProcesses(10))
//	defer budget.Close()
//	client := &http.Client{Transport: retryhttp.New(retryhttp.WithBudget(budget))}
//
// The guide [Budgets, and one budget for a fleet] sets this budget beside
// the per-process one; the module's README has its design, fault model and
// figures. A ThrottleStore shares the counts of adaptive throttling the
// same way, as the section Sharing adaptive throttling tells.
//
// # Arithmetic
//
// The buckets count as budget.PerHost's do, in milli-tokens: 500
// tokens when full, 5 for a retry, 10 for a retry after a timeout, 1 back
// for a first-attempt success and a retry's cost back when it succeeds (or
// was never sent), never below zero or above the capacity. WithBucket takes
// retryhttp's bucket options to change them; every process of a budget must
// use the same ones.
//
// # Redis
//
// Each bucket is one Redis key, retryhttp:budget:<name>:<scheme>://<host>,
// holding its balance. A full bucket is no key at all, and a key that no
// process has used for a minute (WithKeyTTL) expires, so host names cannot
// grow Redis without bound. Two Lua scripts, each touching one key, take a
// retry's cost if the bucket holds it and put refunds back up to the
// capacity; they are loaded when the Budget starts and run by hash, on any
// node of a Redis Cluster.
//
// # Cost
//
// A success sends nothing: its refund is added to a per-host counter in the
// process, and the counters are sent, one command per host, every flush
// interval (100 ms) and by Close. A process keeps counters only for hosts it
// has retried, and drops a host once Redis reports its bucket full, so
// healthy traffic costs Redis nothing. A retry costs one round trip, on a
// path that is about to sleep anyway; after Redis refuses one, retries for
// that host are refused locally for 100 ms (WithEmptyHold).
//
// # When Redis fails
//
// No retry waits for Redis longer than the timeout (50 ms), whatever the
// client's own timeouts and retries, give or take the Go scheduler's delay
// in waking it on a busy machine: the command runs in a goroutine of its
// own, which the retry stops waiting for. A late answer is not lost: a
// cost Redis took for a retry the budget no longer waited for goes back.
// Concurrent retries for one host wait for the take in flight, so their
// wait shares the one timeout, and a refusal it brings answers them all. A
// command that fails, or stays unanswered for four timeouts, moves the
// budget to fallback buckets in the process, whose capacity is the shared
// one divided by WithProcesses, until a background probe finds Redis
// taking writes again. Only a process that has heard from Redis within the key
// TTL has such a share: one that started during the outage, or whose
// knowledge of the buckets has expired, refuses every retry until Redis
// answers, so that a fleet that keeps starting processes (serverless, a
// crash loop, autoscaling in an incident) brings no new budget with each.
// WithFailClosed refuses retries instead. Status reports which the budget
// uses and the last Redis error; Balance a host's balance.
//
// # Fault model
//
// Redis faults come in three kinds, by what they say about the budget's
// buckets: Redis is slow, Redis is unavailable (down, or answering with an
// error that every take would meet), or one key is bad:
//
//	Redis                                  budget                           a process retries, for the fault's length
//	slow: answers after the timeout        shared; that retry paid locally  from Redis, and from the fallback when a
//	                                       if Redis last granted the host   take is late (its cost goes back to Redis)
//	down: refused, reset, silent for       fallback, for every host         one fallback bucket per host, if it heard
//	  four timeouts                                                         from Redis within the key TTL; else none
//	refuses what a take needs: an error    fallback, for every host         the same
//	  reply (READONLY, OOM, BUSY,
//	  LOADING, MASTERDOWN, NOPERM, ...)
//	a host's key of another type           that host alone on the fallback  that host: one fallback bucket; the other
//	  (WRONGTYPE)                                                           hosts: their shared buckets
//
// So the fleet's bound is the shared bucket plus, per process that knew
// Redis, one fallback bucket (capacity / WithProcesses) per host, however
// long the fault lasts: a fallback bucket is refilled only by the successes
// of the retries it paid for, and renewed only when the budget returns to
// Redis, which takes a probe's write. The probe runs a script that writes
// the key whose command failed last (retryhttp:budget:<name>:probe if
// none), leaving it as it was, so that a Redis that answers PING but
// refuses writes, a replica left behind by a failover or one at maxmemory
// with noeviction, does not bring the budget back only to fail again. A
// request never fails because of Redis, and no retry waits for it longer
// than the timeout.
//
// # Sharing adaptive throttling
//
// retryhttp's adaptive throttling (package throttle) refuses requests to a
// host that has been failing, on the counts of its requests over a window,
// which each process keeps apart: twenty processes each sending a failing
// host one request a second never refuse one, since none holds the 20
// requests that a window (10 s) needs before refusing, where one process
// sending all twenty a second would refuse most of them. A ThrottleStore
// shares the counts, so that the twenty refuse together as that one
// process would:
//
//	store := redisbudget.NewThrottleStore(rdb, "payments-api")
//	throttled := retryhttp.New(retryhttp.WithAdaptiveThrottling(throttle.Shared(store)))
//
// A Transport exchanges its counts with the store twice a step of its
// window (every 250 ms by default; twice as often while a host is being
// refused), and at once when a success ends a host's refusals, from a
// goroutine of its own, never on a request's path: one script, one round
// trip, which adds the process's
// counts to their hosts' steps and returns the fleet's sums for every host
// counted within the window, which the Transport throttles on. While an
// exchange fails (Redis down, slower than the timeout, a replica, out of
// memory, a Cluster node that no longer holds the name) the Transport
// throttles on its own counts, and Status says so.
//
// Redis holds each name's counts over each window's width in two keys:
// {retryhttp:throttle:<name>}:hosts:<step ms>, a sorted set of the hosts
// scored by the step they were last counted in, and
// {retryhttp:throttle:<name>}:counts:<step ms>, a hash with a field per
// host holding its sums over the window, its latest Sent and then its
// steps, at most 20. The
// hash tag puts them in one slot of a Redis Cluster; they hold at most 1024
// hosts (WithMaxHosts), and expire a window and a step after the last
// exchange. The script ([exchange.lua]) is loaded and run by hash as the
// budget's are. It takes no process's clock for the fleet's: a step or a
// Sent more than a step ahead of Redis's clock (TIME) is taken as Redis's
// plus a step, so that a process whose clock runs ahead neither keeps its
// hosts over the others' nor writes steps that never leave the window; and
// it drops what it cannot read (a value, a field of a host the set does
// not hold, steps further ahead, a key of another type), so that garbage
// never switches sharing off: it returns at most WithMaxHosts hosts.
//
// # Defaults
//
//	Option                 Default
//	WithBucket             retryhttp's: capacity 500, retry 5, timeout 10, refund 1
//	WithProcesses          1 (a fallback bucket as large as a shared one)
//	WithFallbackCapacity   shared capacity / processes, at least one retry's cost
//	WithFailClosed         off: the fallback pays for retries
//	WithTimeout            50 ms
//	WithFlushInterval      100 ms
//	WithEmptyHold          100 ms
//	WithProbeInterval      500 ms
//	WithKeyTTL             1 minute
//	WithMaxHosts           1024 hosts with local state per process
//	WithLogger             none
//
// A ThrottleStore uses WithTimeout, WithMaxHosts (the hosts Redis holds per
// name and window), WithKeyTTL (never longer than a window and a step) and
// WithLogger, with the same defaults.
//
// [Budgets, and one budget for a fleet]: https://github.com/retryhttp/retryhttp/blob/main/docs/budgets.md
// [exchange.lua]: https://github.com/retryhttp/retryhttp/blob/main/redisbudget/exchange.lua
package redisbudget
