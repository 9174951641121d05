package redisbudget

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// scripts runs the one script of a store that exchanges with Redis (a
// ThrottleStore's, a PaceStore's) and keeps the store's Status: whether
// its last exchange succeeded, logged when that changes.
type scripts struct {
	client   redis.UniversalClient
	name     string
	cfg      config
	inflight atomic.Int64 // scripts running
	down, up string       // what the log says when exchanges start and stop failing

	mu     sync.Mutex // guards status
	status Status
}

func newScripts(client redis.UniversalClient, name string, cfg config, down, up string) scripts {
	return scripts{client: client, name: name, cfg: cfg, down: down, up: up, status: Status{Shared: true, Since: cfg.now()}}
}

// run runs script and returns its reply, waiting no longer than the
// timeout, nor once ctx is done. The script runs in a goroutine of its
// own, so that a client that ignores deadlines or retries for seconds
// cannot hold the caller; at most maxInflight are left running.
func (s *scripts) run(ctx context.Context, script *redis.Script, keys []string, args ...any) (string, error) {
	if s.inflight.Add(1) > maxInflight {
		s.inflight.Add(-1)
		return "", errBusy
	}
	ctx, cancel := context.WithTimeoutCause(ctx, s.cfg.timeout, errTimeout)
	defer cancel()
	var (
		done  = make(chan struct{})
		reply string
		err   error
	)
	go func() {
		defer s.inflight.Add(-1)
		reply, err = script.Run(ctx, s.client, keys, args...).Text()
		close(done)
	}()
	select {
	case <-done:
		return reply, err
	case <-ctx.Done():
		select {
		case <-done: // answered just now
			return reply, err
		default:
			return "", context.Cause(ctx)
		}
	}
}

// Status reports whether the last exchange succeeded.
func (s *scripts) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.status
}

// failed records the error of an exchange.
func (s *scripts) failed(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.cfg.now()
	s.status.LastError, s.status.LastErrorAt = err, now
	if !s.status.Shared {
		return
	}
	s.status.Shared, s.status.Since = false, now
	if s.cfg.logger != nil {
		s.cfg.logger.LogAttrs(context.Background(), slog.LevelWarn, s.down,
			slog.String("store", s.name), slog.String("error", err.Error()))
	}
}

// answered records an exchange that succeeded.
func (s *scripts) answered() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.status.Shared {
		return
	}
	s.status.Shared, s.status.Since = true, s.cfg.now()
	if s.cfg.logger != nil {
		s.cfg.logger.LogAttrs(context.Background(), slog.LevelInfo, s.up, slog.String("store", s.name))
	}
}
