// Package pace configures pacing to a quota: a retryhttp Transport sends
// each host the requests it accepts, at the rate it accepts them, instead
// of learning from its 429s after the fact. A request, first attempt or
// retry, waits for its turn; it never waits past MaxWait or its context's
// deadline, and fails at once with an *Error when its turn is further off.
//
// Pacing is off by default. retryhttp.WithPacing turns it on, and the
// options of this package change how:
//
//	retryhttp.New(retryhttp.WithPacing())                                      // the defaults below
//	retryhttp.New(retryhttp.WithPacing(pace.PartitionHeader("Authorization"))) // a quota per token
//	retryhttp.New(retryhttp.WithPacing(pace.Quota("api.example.com", 500, time.Minute))) // a quota known
//
// # When a host is paced
//
// A host is not paced, and its requests wait for nothing, until it
// throttles one (a 429, or a 503 with Retry-After) or announces a quota
// with a tenth or less of it left. It stops being paced when it has done
// neither for 30 s, counted from the end of a Retry-After. A host with a
// Quota declared is paced from its first request, and always. The retry
// of a throttle from a paced host is paid by its turn, not by the retry
// budget. Hosts, or the partitions of PartitionHeader, are paced
// apart, at most 1024 of them (MaxHosts), about 1 KB each.
//
// # The rate
//
// A quota a host announces gives the rate: GitHub's x-ratelimit-*,
// OpenAI's x-ratelimit-*-requests, Anthropic's anthropic-ratelimit-requests-*,
// Shopify's X-Shopify-Shop-Api-Call-Limit, and the IETF RateLimit and
// RateLimit-Policy fields (the most restrictive of their items) and their
// older drafts' forms. What remains of a window is spread over what is
// left of it, rather than spent and then waited for; a bucket that refills
// is sent at its refill; an announced policy (q per w) is never exceeded.
// Without a quota, the rate is learned from the throttles, much as TCP
// CUBIC learns a path's: a throttle cuts it to 3/4 of what the host took
// over the last cycle; then it is back at 95% of that in 0.5 s, stays
// there 1.25 s, and probes above it, at 100% 1.92 s after the cut, at
// most doubling a second (the AWS SDK's adaptive mode, from 50 a second,
// is back at 100% 3.35 s after a cut and at 200% 8.35 s after it). A
// Retry-After of more than a second comes first: no request is sent before
// it ends; one of a second, what a bucket refilling many times a second
// says, cuts the rate, and only the throttled request's retry waits it
// out.
//
// # A fleet
//
// Each Transport paces alone, as if it were the host's only client: the
// workers of a process share one pace when they share one Transport.
// Transports that share a Store (Shared) pace together: what one learns of
// a host reaches the others, and a quota is split among them by what each
// asks of it. NewMemoryStore serves the Transports of a process,
// redisbudget.NewPaceStore the processes of a fleet. Without a Store, give
// each process its share, Quota(host, quota/N, per), or a key or token of
// its own with its own quota, and give PartitionHeader the header that
// carries it.
package pace
