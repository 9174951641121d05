package pace

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/retryhttp/retryhttp/internal/config"
	"github.com/retryhttp/retryhttp/internal/wire"
)

// An Option changes how a Transport paces its requests.
type Option func(*config.Pace)

// MaxWait sets the longest a request may wait for its turn. A request that
// would wait longer, or longer than its context's deadline leaves, fails at
// once with an *Error, never sent. It must not be negative; 0 fails every
// request that would have to wait at all. The default is 10 s.
func MaxWait(d time.Duration) Option {
	if d < 0 {
		panic("pace: MaxWait: must not be negative, got " + d.String())
	}
	return func(c *config.Pace) { c.MaxWait = d }
}

// PartitionHeader paces apart the requests to a host whose values of the
// request header name differ, for a quota per API key or token:
// PartitionHeader("Authorization") gives each token the pace its own quota
// allows. Values are hashed with a seed of the Transport's own, never
// stored. Requests without the header share their host's partition. It must
// be a valid header name. By default a host's requests share one pace.
func PartitionHeader(name string) Option {
	if name == "" || !wire.ValidHeaderName(name) {
		panic(fmt.Sprintf("pace: PartitionHeader: must be a valid header name, got %q", name))
	}
	name = http.CanonicalHeaderKey(name)
	return func(c *config.Pace) { c.PartitionHeader = name }
}

// MaxHosts sets how many hosts (partitions, with PartitionHeader) are
// remembered; when a new one comes, the one least recently used is
// forgotten, and starts afresh, unpaced, if it comes again. It must be at
// least 1. The default is 1024.
func MaxHosts(n int) Option {
	if n < 1 {
		panic(fmt.Sprintf("pace: MaxHosts: must be at least 1, got %d", n))
	}
	return func(c *config.Pace) { c.MaxHosts = n }
}

// Quota declares the quota of host (as a request's URL names it, with its
// port when not the default), requests per the given time, so that its
// requests are paced from the first one on instead of from its first 429:
// a batch fired at once is sent at the quota, and none of it is refused.
// The host is paced at the quota, or slower when it throttles or announces
// less; never faster. With PartitionHeader, each partition of host is
// paced at the quota, as each API key of a vendor has a quota of its own.
// requests and per must be positive. Quotas of different hosts add up; a
// quota given again for the same host replaces the one before. By default
// no quota is declared.
func Quota(host string, requests int, per time.Duration) Option {
	if host == "" || requests < 1 || per <= 0 {
		panic(fmt.Sprintf("pace: Quota: needs a host and a positive number of requests per a positive time, got %q, %d per %v", host, requests, per))
	}
	key := quotaHost(host)
	rate := float64(requests) / per.Seconds()
	return func(c *config.Pace) {
		if c.Quotas == nil {
			c.Quotas = map[string]float64{}
		}
		c.Quotas[key] = rate
	}
}

// quotaHost returns host as requests to it are keyed: in lower case, its
// scheme's default port removed.
func quotaHost(host string) string {
	host = strings.ToLower(host)
	host = strings.TrimSuffix(host, ":443")
	return strings.TrimSuffix(host, ":80")
}

// ErrWaitTooLong is what every *Error is: errors.Is(err, ErrWaitTooLong)
// reports whether a request failed because its turn was too far off.
var ErrWaitTooLong = errors.New("retryhttp: pace: a request would wait too long for its turn")

// An Error reports a request that was not sent because its turn to be sent
// to Host was further off than allowed.
type Error struct {
	// Host is the host the request was for.
	Host string
	// Wait is how long the request would have had to wait for its turn.
	Wait time.Duration
	// Allowed is what Wait exceeds: MaxWait, or the time its context's
	// deadline left, whichever is less.
	Allowed time.Duration
}

// Error returns a sentence such as "retryhttp: pace: api.example.com: a
// request would wait 3.2s for its turn, more than the 1s allowed".
func (e *Error) Error() string {
	return "retryhttp: pace: " + e.Host + ": a request would wait " + round(e.Wait).String() +
		" for its turn, more than the " + round(e.Allowed).String() + " allowed"
}

// Is reports whether target is ErrWaitTooLong.
func (e *Error) Is(target error) bool { return target == ErrWaitTooLong }

// round rounds d for reading: to the millisecond from a second on, to the
// microsecond from a millisecond on.
func round(d time.Duration) time.Duration {
	switch {
	case d >= time.Second:
		return d.Round(time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(time.Microsecond)
	}
	return d
}
