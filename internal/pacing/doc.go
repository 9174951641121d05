// Package pacing decides when each request to a host (or to a partition of
// one) may be sent, so that the host is sent requests at the rate it
// accepts rather than told by its 429s, after the fact, that it was sent
// too many.
//
// # Contract
//
// A Pacer is given each request's Key and the time it asks to be sent
// (Reserve), and each response's status, header and the time its request
// was sent (Observe). It decides how long the next request to a key must
// wait for its turn, and whether that wait is within what the request
// allows. It never delays a key that has not been throttled (a 429, or a
// 503 with Retry-After) nor announced a quota it has spent or nearly spent;
// it never sends, never sleeps, never logs, starts no goroutine and reads
// no clock: every time is given. Observe returns what changed (a key
// started or stopped being paced, and its rate), for the caller to log.
//
// # Turns
//
// A key paced has a schedule of turns, one an interval after another at its
// rate, given in the order asked for (see schedule.go). A turn is a caller
// asleep until its slot, who asks again (Turn.Wait) when it wakes: a turn
// can be put off, never brought forward. A throttle thins the turns to come
// to its slower rate at once; a Retry-After, or a window spent, holds every
// turn until it ends; a faster rate spaces the turns given from then on, as
// far ahead as it is foreseen. A turn whose wait would exceed what its
// request allows is not given (Reserve reports false), and a turn put off
// past it is the caller's to Release.
//
// # The rate
//
// Without quota headers the rate is learned from throttles as TCP CUBIC
// learns a path's (see growth.go); with them it is the rate the quota
// allows (see quotarate.go), of the forms quota.go reads: GitHub's, OpenAI's,
// Anthropic's, Shopify's and the IETF RateLimit fields.
//
// # Bounds
//
//   - A turn given never waits longer than the limit it was asked with.
//   - Retry-After comes first: no turn is due before it ends.
//   - A key neither throttled nor low on quota for 30 s is no longer paced.
//   - At most MaxHosts keys are known, the least recently used forgotten;
//     a key takes about 700 bytes.
//   - Every reader of a peer's header reads a bounded prefix of a value,
//     saturates instead of overflowing, and never panics.
package pacing
