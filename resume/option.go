package resume

import (
	"strconv"
	"time"

	"github.com/retryhttp/retryhttp/internal/config"
)

// An Option configures resumption, given to retryhttp.WithResume.
type Option func(*config.Resume)

// Limit sets the most resumes one response body gets: requests for the
// rest of the body, each sent after a read of it failed (a cut, a reset, a
// stall) or after an earlier such request failed. A body that fails once
// more ends the caller's read with an *Error whose Reason is GaveUp and
// whose GiveUp is retryhttp.GiveUpResumeLimit. The default is 10. n must
// be at least 1: retryhttp.WithoutResume turns resumption off.
func Limit(n int) Option {
	if n < 1 {
		panic("resume: Limit: must be at least 1 (retryhttp.WithoutResume turns resumption off), got " + strconv.Itoa(n))
	}
	return func(c *config.Resume) { c.Limit = n }
}

// StallTimeout sets how long a read of a resumable response body may wait
// without receiving a byte before the body is treated as cut, and resumed:
// the read waits at least d and at most 1.25·d. The same bound applies to a
// resume's wait for its response headers. Only a body that may be resumed
// is watched, and only while the caller waits in Read: a caller that takes
// its time between reads is not stalled, and a body that cannot be resumed
// (a stream of server-sent events, say) may stay idle for as long as its
// server likes. The default is 10 s; 0 turns stall detection off, leaving
// cuts and resets resumed.
func StallTimeout(d time.Duration) Option {
	if d < 0 {
		panic("resume: StallTimeout: negative duration " + d.String())
	}
	return func(c *config.Resume) { c.StallTimeout = d }
}
