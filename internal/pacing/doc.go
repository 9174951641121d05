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
// A Pacer made Shared is the exception: it exchanges what it knows with
// the other members of a pace.Store from a goroutine of its own, on the
// clock it is given, while keys are paced (see share.go); no call of
// Reserve, Wait or Observe waits for it.
//
// # Turns
//
// A key paced has a schedule of turns, one an interval after another at its
// rate, given in the order asked for (see schedule.go), at most a horizon
// (250 ms) ahead; a request whose turn is further off waits in the key's
// queue, in order, without a slot, and the head of the queue takes the next
// slot once it comes within the horizon (see queue.go). So a rate that
// changes reaches a backlog of any depth within the horizon. A turn is a
// caller asleep (Turn.Nap) who asks again (Turn.Wait) when it wakes, or
// when Turn.Woken wakes it. A throttle thins the turns to come to its
// slower rate at once; a Retry-After of more than a second, or a window
// spent, holds every turn until it ends; the rate given to a slot at most
// doubles a second. A turn whose wait would exceed what its request allows
// is not given (Reserve reports false), and a turn put off past it is the
// caller's to Release.
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
//   - A Retry-After of more than a second comes first: no turn is due
//     before it ends. One of a second or less, the least the header says
//     and what a bucket that refills many times a second answers, cuts the
//     rate without holding the other turns; the throttled request's own
//     retry waits it out (the Transport's rule).
//   - A waiter costs one allocation and one channel, only while its key's
//     backlog is past the horizon.
//   - A key neither throttled nor low on quota for 30 s, counted from the
//     end of a Retry-After that holds it (at most the Retry-After limit),
//     is no longer paced; a key whose host has a quota declared is paced
//     from its first request, and for as long as it is known.
//   - At most MaxHosts keys are known, the least recently used forgotten;
//     a key takes about 1 KB (a state of 968 bytes, and its place in the table).
//   - Every reader of a peer's header reads a bounded prefix of a value,
//     saturates instead of overflowing, and never panics.
package pacing
