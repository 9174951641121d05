package scenario

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestQuotaFleetPacesTogetherThroughRedis runs the fleet of the quota
// scenario, shortened: 10 processes (copies of this test binary) each
// offered 20 GETs a second (the scenario's 200 a second in all) for 13 s,
// with deadlines of 5 s, against one quota of 50 a second (burst 10),
// sharing their pace through a redisbudget.PaceStore on a real
// redis-server: without quota headers, with OpenAI's, and with them and
// Redis killed at 3 s; and, as the baseline, the processes pacing alone,
// without headers. The four runs go at once (about 18 s); 20 processes
// each would hold both CPUs of the CI's machine with their exchanges.
//
// It holds the fleet to the goals it meets: with the headers, at most 2%
// of 429s after the first 2 s (none, as a rule); without them, at least
// 95% of the quota (98.4-99.5%), and at most 2% of 429s after the first
// 2 s, held at 4% for a loaded machine (1.1% here, 1.6% with the
// scenario's 20 processes), fewer than the processes draw alone
// (26.6-29.5%); at most 5% of 429s in the 10 s after Redis dies (none, as
// a rule); and no Redis command sent from a request's goroutine. One goal
// is missed, by 20 processes in the scenario and by 10 here, and is held
// to a bound of its own so that the shortfall does not grow unseen: with
// headers, the members admit less than the quota for their first seconds,
// 83.5-97.1% of it after 2 s over 7 runs (85.7-94.2% with 20 processes):
// the bound is 75%.
func TestQuotaFleetPacesTogetherThroughRedis(t *testing.T) {
	t.Parallel()
	l := DefaultFleetLoad()
	l.Processes, l.Rate = 10, 20
	l.Length, l.KillAt = 13*time.Second, 3*time.Second
	all := l.Runs()
	runs := all[:4] // through Redis, then alone without headers
	got := make([]FleetResult, len(runs))
	errs := make([]error, len(runs))
	var wg sync.WaitGroup
	start := time.Now()
	for i, fr := range runs {
		dir := t.TempDir()
		wg.Go(func() { got[i], errs[i] = fr.Run(context.Background(), os.Args[0], dir) })
	}
	wg.Wait()
	tb := l.table()
	for i, fr := range runs {
		require.NoError(t, errs[i], "%s (redis-server must be on the PATH: install it, as the CI does)", fr.Name)
		tb.Add(fr.cells(got[i])...)
	}
	logTable(t, tb)
	t.Logf("%d runs at once in %v", len(runs), time.Since(start).Round(time.Millisecond))
	for i, fr := range runs {
		t.Logf("%s: ready in %v; admitted each second %v; 429s %v", fr.Name, got[i].Ready.Round(time.Millisecond),
			got[i].AdmittedBySecond, got[i].BySecond)
	}

	alone := got[3].ThrottledShare()
	for i, fr := range runs {
		t.Run(fr.Name, func(t *testing.T) {
			r := got[i]
			assert.Equal(t, l.Processes*l.Rate*int(l.Length/time.Second), r.Requests, "requests started")
			assert.Zero(t, r.Failed, "requests that failed otherwise than by pacing, their deadline or a 429")
			switch {
			case fr.Share == PaceAlone:
				assert.Greater(t, r.ThrottledShare(), 2*got[0].ThrottledShare(), "429s after 2 s, each process pacing alone, against the fleet through Redis")
			case fr.Kill:
				assert.Positive(t, r.KillReached, "attempts after Redis died")
				assert.LessOrEqual(t, r.KillShare(), 0.05, "429s in the 10 s after Redis died")
			case fr.Announce:
				assert.LessOrEqual(t, r.ThrottledShare(), 0.02, "429s after 2 s")
				assert.GreaterOrEqual(t, r.OfQuota(), 0.95, "share of the quota after 2 s")
			default:
				assert.LessOrEqual(t, r.ThrottledShare(), 0.04, "429s after 2 s (goal 2%)")
				assert.Less(t, r.ThrottledShare(), alone, "429s after 2 s, against the processes pacing alone")
				assert.GreaterOrEqual(t, r.OfQuota(), 0.95, "share of the quota after 2 s")
			}
			if fr.Share == PaceThroughRedis {
				assert.NotEmpty(t, r.Exchanges, "exchanges with Redis")
				assert.Zero(t, r.OnRequestPath, "Redis commands sent from a request's goroutine")
			}
		})
	}
}
