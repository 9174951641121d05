// Package throttle configures adaptive throttling: a retryhttp Transport
// refuses, at once and without sending them, a share of the requests to a
// host that has been failing, so that callers fail fast and can fall back,
// and a dependency that is down is not sent every request while it is down.
//
// Throttling is off by default. retryhttp.WithAdaptiveThrottling turns it
// on, and the options of this package change how:
//
//	retryhttp.New(retryhttp.WithAdaptiveThrottling())                       // the defaults below
//	retryhttp.New(retryhttp.WithAdaptiveThrottling(throttle.Multiplier(3))) // refuses later and less
//
// A refused request fails with an error wrapping retryhttp.ErrThrottled,
// and retryhttp.Transport.Rejections yields each counted host's
// Rejection, for a gauge.
//
// # The model
//
// It is the client-side throttling of Google's SRE book. For each host, the
// Transport counts over a sliding window (10 s by default, Window) the
// requests it made and those the host accepted, and refuses a new request
// with probability
//
//	max(0, (requests - K·accepts) / (requests + 1))
//
// with K = 2 (Multiplier), so that a host accepting most requests is
// refused nothing and one accepting nothing is sent a trickle. Nothing is
// refused until the window holds 20 attempts and refusals (MinRequests),
// and never with a probability above 0.9 (MaxRejection), so that requests
// keep reaching a failing host and see when it heals.
//
// # What is counted
//
// It counts what the callers get: a request is counted when it ends, with
// every attempt it made (each retry, and each hedge sent), all of them
// accepted if it ends with an outcome the classifier does not retry (a 2xx,
// a 4xx, a final verdict), and none of them if it ends with one it would (a
// 5xx, a 429, a reset connection, an attempt timeout) because its attempts,
// its budget or its deadline ran out or it could not be resent. So a
// request that its retries rescued counts for its host, not against it,
// and a host whose requests all end in success is refused nothing, however
// many of their first attempts fail; a request still waiting to retry
// counts nothing yet. A refusal is no evidence against the host: it counts
// towards MinRequests only, so that refusals never keep a host refused on
// their own. While a host is being refused requests, a retry to it is
// refused as a new request would be (its request then ends with its last
// attempt's outcome, and the give-up hook sees GiveUpThrottled), so that
// what reaches the host is its share of everything the callers send;
// hedges are not refused. A caller who gives up (its context done) says
// nothing of the host and is not counted, nor is a request never sent for
// lack of time.
//
// # The way back
//
// The way back is bounded in time at any rate. A host being refused
// requests is sent one all the same, a probe, when the last 4 were refused
// and none was sent for a tenth of the window (1 s by default). The first
// request sent to it that succeeds, a probe or one the probability let
// through, ends the refusals: its window is forgotten and it gets every
// request again. So the refusals end within about a tenth of the window
// after the host heals, or within 5 requests when these take longer,
// whatever the rate: a host is refused only while every request it is
// sent fails.
//
// # A host that was healthy
//
// Until a host fails, its successes only measure its rate. When it first
// fails, it is credited with what it accepted over the last 2 s (a fifth
// of the window), as accepts that fade over 5 s: a host that served every
// request a moment ago is refused nothing for its first failures, and a
// host that flaps, up and down in turn, serves its good periods, while one
// that stays down is refused within a second or two. Once its window holds
// no failure, it is calm again.
//
// # What it costs
//
// At most 1024 hosts are counted (one that never failed, or else the one
// that failed least recently, makes room for a new one); of them, the
// hosts a Store reports failures of that the process never requested take
// the room left, and at most 512, in one table an exchange, never pushing
// the process's own out. A request to a
// host that is not being refused costs a map lookup and one atomic add,
// and no clock reading. Each Transport has counts of its own, even when
// several share the Option, unless they share a Store (Shared): then
// each request also reads a flag, which it sets once per exchange.
//
// The guide [Failing fast when a host is down] tells why it works this way
// and measures it against other libraries' throttlers and breakers.
//
// [Failing fast when a host is down]: https://github.com/retryhttp/retryhttp/blob/main/docs/throttling.md
package throttle
