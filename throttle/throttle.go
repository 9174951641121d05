package throttle

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/retryhttp/retryhttp/internal/config"
)

// An Option changes how a Transport throttles; pass it to
// retryhttp.WithAdaptiveThrottling.
type Option func(*config.Throttle)

// Multiplier sets K: a host is sent up to K times as many requests as it
// accepted over the window before requests are refused. It must be a
// finite number of at least 1. The default is 2; a higher K refuses later
// and less.
func Multiplier(k float64) Option {
	if !(k >= 1) || math.IsInf(k, 1) {
		panic(fmt.Sprintf("throttle: Multiplier: must be a finite number of at least 1, got %v", k))
	}
	return func(c *config.Throttle) { c.Multiplier = k }
}

// Window sets how far back the outcomes of a host's requests count. It
// must be at least 100 ms. The default is 10 s. The window turns in 20
// steps, a twentieth of it at a time.
func Window(d time.Duration) Option {
	if d < 100*time.Millisecond {
		panic("throttle: Window: must be at least 100ms, got " + d.String())
	}
	return func(c *config.Throttle) { c.Window = d }
}

// MaxRejection sets the highest probability with which a request is
// refused. It must be in (0, 1): below 1, some requests always reach the
// host, and find out when it has healed. The default is 0.9.
func MaxRejection(p float64) Option {
	if !(p > 0 && p < 1) {
		panic(fmt.Sprintf("throttle: MaxRejection: must be in (0, 1), got %v", p))
	}
	return func(c *config.Throttle) { c.MaxRejection = p }
}

// MinRequests sets how many attempts and refusals of a host the window
// must hold before any request is refused, so that a few failures of a
// host seldom called refuse nothing. It must be at least 1. The default is
// 20.
func MinRequests(n int) Option {
	if n < 1 {
		panic(fmt.Sprintf("throttle: MinRequests: must be at least 1, got %d", n))
	}
	return func(c *config.Throttle) { c.MinRequests = n }
}

// A Rejection is the probability with which the requests to one
// destination are refused now, as retryhttp.Transport.Rejections yields
// it.
type Rejection struct {
	// Scheme is the destination's scheme, in lower case.
	Scheme string
	// Host is the destination's host in lower case, with its port unless
	// that is the scheme's default.
	Host string
	// Probability is the probability with which a request to the host is
	// refused now, from 0 to the highest allowed (MaxRejection).
	Probability float64
}

// Shared makes a Transport share the evidence it throttles on, the counts
// of the requests to each host, with the other processes of a fleet
// through s, so that together they refuse requests to a failing host as
// one process sending all of their requests would, and recover as it
// would. redisbudget.NewThrottleStore is such a Store, on Redis.
//
// Sharing never makes a request wait: the Transport exchanges its counts
// with s in batches, twice a step of the window (four times while a host
// is being refused), and at once when it sends a refused host a request
// or a success ends a host's refusals, from a goroutine of its own that
// runs while it sends requests and for a window after. An exchange is cut
// after 4 steps. The fleet probes a refused host as one process would: a
// process probes it when no process sent it a request for a tenth of the
// window (Counts.Sent). While exchanges fail, the Transport throttles on
// its own counts, taken for its share of the fleet's as at the last
// exchange, and on the fleet's last ones, fading over a window. A Sent
// further ahead of the process's clock than a two-hundredth of the window
// comes from a clock that runs ahead: it counts as a tenth of the window
// ago until a later one comes, so that the host is probed as often as one
// process alone would probe it, whatever the lead. An Exchange
// that panics fails, as one that returns an error does; the Transport's
// logger gets the first panic at WARN.
func Shared(s Store) Option {
	if s == nil {
		panic("throttle: Shared: nil Store")
	}
	return func(c *config.Throttle) { c.Store = s }
}

// A Store shares the counts of adaptive throttling among the processes of
// a fleet. Its methods may be called concurrently.
type Store interface {
	// Exchange adds counts, the outcomes a process counted per host since
	// its last exchange, to the fleet's, and returns the fleet's counts
	// over the last window (theirs included) for every host it holds
	// counts of, at most a bounded number. A host whose counts restarted
	// from a Healed mark has only those counted after it. The counts
	// returned have Healed false; a host left out has no counts. When it
	// fails, the counts given are given again at the next exchange.
	Exchange(ctx context.Context, window time.Duration, counts []Counts) ([]Counts, error)
}

// Counts are the outcomes of requests to one host that adaptive
// throttling counts.
type Counts struct {
	// Scheme is the host's scheme, in lower case.
	Scheme string
	// Host is the host in lower case, with its port unless that is the
	// scheme's default.
	Host string
	// Attempts is how many attempts the requests sent to the host made.
	Attempts int64
	// Accepted is how many of those attempts the host accepted.
	Accepted int64
	// Refused is how many requests to the host were refused without
	// being sent.
	Refused int64
	// Healed reports that a request sent to the host while it was being
	// refused requests succeeded, which ends the refusals: the fleet's
	// counts of the host before it no longer count.
	Healed bool
	// Sent is when a request was last sent to the host while it was being
	// refused requests, or zero. A Store keeps the latest it is given of a
	// host, and returns it while the host has counts, so that the fleet's
	// processes probe a refused host in turn rather than each on its own
	// (a Store that returns zero leaves each to its own). A Healed mark
	// forgets it.
	Sent time.Time
}
