//go:build race

package retryhttp

// raceEnabled: the race detector makes sync.Pool drop items at random, so
// allocation counts of pooled paths are not pinned under it.
const raceEnabled = true
