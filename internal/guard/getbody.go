package guard

import (
	"io"

	"github.com/retryhttp/retryhttp/internal/replay"
)

// GetBody returns a GetBody for a guarded attempt of a request whose
// body r replays and whose GetBody is getBody, for the resends of
// net/http's that the attempt's guard lets through, or nil when there is
// no body to give. A GetBody of http.NewRequest's is given as it is:
// whoever calls it, its body shares nothing with the one it replaces. Any
// other comes through RewindOnly, as does a body copied as it is sent.
func GetBody(r *replay.Replay, getBody func() (io.ReadCloser, error)) func() (io.ReadCloser, error) {
	switch {
	case r.Source() != nil:
		return RewindOnly(r.Source())
	case r.None() || getBody == nil:
		return nil
	case replay.FreshBodies(getBody):
		return getBody
	}
	return RewindOnly(replay.GetBody(getBody))
}
