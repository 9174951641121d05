package redisbudget

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/retryhttp/retryhttp/pace"
)

var (
	//go:embed pace.lua
	paceSource string
	paceScript = redis.NewScript(paceSource)
)

// A PaceStore is a pace.Store in Redis: the processes of a fleet that
// give pace.Shared the same PaceStore (the same name on the same Redis)
// pace their hosts together, a throttle one of them meets cutting every
// one's rate, a Retry-After holding every one's turns, and a quota split
// among them by what each asks of it.
//
// Each exchange is one round trip, one script, on one key: it records the
// process's reports for their lease and returns the fleet's view of every
// host a process reported within its own. A Transport exchanges 50 times a
// second while it paces a host, so a fleet of n pacing processes runs 50n
// scripts a second, whatever its traffic, and none while nothing is paced.
// The times in a report travel as durations from the process's clock and
// are kept on Redis's clock, so that processes whose clocks disagree
// agree on when a hold ends.
//
// Redis holds, per name, one hash of at most WithMaxHosts × 16 fields
// (16,384 by default), a field per host and process, each forgotten when
// its lease ends; the key expires two leases after the last exchange. Its
// name has the store's name in a hash tag, for a Redis Cluster.
//
// A PaceStore must be created with NewPaceStore and is safe for concurrent
// use. It has no goroutine of its own and nothing to close.
type PaceStore struct {
	scripts
	key string
}

var _ pace.Store = (*PaceStore)(nil)

// NewPaceStore returns a PaceStore named name whose reports live in Redis
// through client, which may be a *redis.Client, a *redis.ClusterClient, a
// Sentinel-backed failover client or a *redis.Ring. It sends no command.
// It panics if client is nil, name is empty or an option is invalid.
//
// Of the options, WithTimeout bounds each exchange (50 ms), WithMaxHosts
// the hosts of a fleet (1024, 16 processes each), and WithLogger logs when
// exchanges start and stop failing. The others have no effect on a
// PaceStore, so that one list of options may serve a Budget too.
func NewPaceStore(client redis.UniversalClient, name string, opts ...Option) *PaceStore {
	cfg := newConfig("NewPaceStore", client, name, opts)
	return &PaceStore{
		scripts: newScripts(client, name, cfg,
			"redisbudget: Redis unavailable, each process pacing on its last share",
			"redisbudget: Redis answers again, pacing for the fleet"),
		key: "{retryhttp:pace:" + name + "}:reports",
	}
}

// maxPaceKey bounds the length of a host's key in a report.
const maxPaceKey = 512

// Exchange records reports, member's, for lease, and returns the fleet's
// view, as pace.Store says. It returns an error without sending anything
// if member is empty or holds a space or a control character, if lease is
// under a millisecond, or if a report has a key that is empty, longer than
// 512 bytes or holds a space or a control character, or a demand or quota
// that is negative or not finite. It waits for Redis no longer than the
// timeout (WithTimeout), nor once ctx is done.
func (s *PaceStore) Exchange(ctx context.Context, member string, lease time.Duration, reports []pace.Report) ([]pace.Report, error) {
	if !plainWord(member, maxPaceKey) {
		return nil, fmt.Errorf("redisbudget: Exchange: member %q is not a word", member)
	}
	if lease < time.Millisecond {
		return nil, fmt.Errorf("redisbudget: Exchange: a lease of %v is under a millisecond", lease)
	}
	now := s.cfg.now()
	batch := make([]byte, 0, 64*len(reports))
	for _, r := range reports {
		if !plainWord(r.Key, maxPaceKey) || !finite(r.Demand) || !finite(r.Quota) {
			return nil, fmt.Errorf("redisbudget: Exchange: a report of %q that does not travel", r.Key)
		}
		ago, hold := int64(-1), int64(0)
		if !r.Cut.IsZero() {
			ago = max(now.Sub(r.Cut).Milliseconds(), 0)
		}
		if r.Hold.After(now) {
			hold = max(r.Hold.Sub(now).Milliseconds(), 1)
		}
		batch = strconv.AppendFloat(batch, r.Demand, 'g', -1, 64)
		batch = append(batch, ' ')
		batch = strconv.AppendInt(batch, ago, 10)
		batch = append(batch, ' ')
		batch = strconv.AppendInt(batch, hold, 10)
		batch = append(batch, ' ')
		batch = strconv.AppendFloat(batch, r.Quota, 'g', -1, 64)
		batch = append(batch, ' ')
		batch = append(batch, r.Key...)
		batch = append(batch, '\n')
	}
	reply, err := s.run(ctx, paceScript, []string{s.key}, member, lease.Milliseconds(), s.cfg.maxHosts*16, batch)
	if err != nil {
		if ctx.Err() == nil {
			s.failed(err)
		}
		return nil, err
	}
	fleet, err := parseFleet(reply, s.cfg.now(), s.cfg.maxHosts*16)
	if err != nil {
		s.failed(err)
		return nil, err
	}
	s.answered()
	return fleet, nil
}

// plainWord reports whether s is a non-empty word of at most n bytes
// without a space or a control character: what travels in a line of the
// script's batch.
func plainWord(s string, n int) bool {
	if s == "" || len(s) > n {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] == 0x7f {
			return false
		}
	}
	return true
}

// finite reports whether x is a finite number, at least 0.
func finite(x float64) bool { return x >= 0 && !math.IsInf(x, 1) }

// errFleet is the error of a reply that does not read.
var errFleet = errors.New("redisbudget: the pace script's reply does not read")

// parseFleet reads the pace script's reply, a line per host, its
// durations from now, at most most lines. A reply that does not read is
// an error: its numbers, or a line, are not the script's.
func parseFleet(reply string, now time.Time, most int) ([]pace.Report, error) {
	var out []pace.Report
	for line := range strings.SplitSeq(reply, "\n") {
		if line == "" {
			continue
		}
		if len(out) == most {
			return nil, errFleet
		}
		f := strings.Fields(line)
		if len(f) != 6 {
			return nil, errFleet
		}
		demand, err1 := strconv.ParseFloat(f[0], 64)
		ago, err2 := strconv.ParseInt(f[1], 10, 64)
		hold, err3 := strconv.ParseInt(f[2], 10, 64)
		quota, err4 := strconv.ParseFloat(f[3], 64)
		members, err5 := strconv.Atoi(f[4])
		if err := errors.Join(err1, err2, err3, err4, err5); err != nil ||
			!finite(demand) || !finite(quota) || ago < -1 || hold < 0 || members < 1 ||
			ago > math.MaxInt64/int64(time.Millisecond) || hold > math.MaxInt64/int64(time.Millisecond) {
			return nil, errFleet
		}
		r := pace.Report{Key: f[5], Demand: demand, Quota: quota, Members: members}
		if ago >= 0 {
			r.Cut = now.Add(-time.Duration(ago) * time.Millisecond)
		}
		if hold > 0 {
			r.Hold = now.Add(time.Duration(hold) * time.Millisecond)
		}
		out = append(out, r)
	}
	return out, nil
}
