package redisbudget

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/retryhttp/retryhttp"
)

// A store holds the shared buckets. Each method touches one key. Amounts
// are in milli-tokens; a missing bucket is a full one.
type store interface {
	// take withdraws cost from the bucket at key if it holds that much. It
	// reports whether it did and the balance afterwards.
	take(ctx context.Context, key string, cost retryhttp.Tokens) (ok bool, balance retryhttp.Tokens, err error)
	// refund puts amount back into the bucket at key, up to its capacity,
	// and returns the balance afterwards.
	refund(ctx context.Context, key string, amount retryhttp.Tokens) (retryhttp.Tokens, error)
	// balance returns what the bucket at key holds.
	balance(ctx context.Context, key string) (retryhttp.Tokens, error)
	// ping checks that the store answers.
	ping(ctx context.Context) error
	// load readies the store for the other calls.
	load(ctx context.Context) error
}

var (
	//go:embed take.lua
	takeSource string
	//go:embed refund.lua
	refundSource string

	// The scripts are loaded into Redis on first use and run by hash from
	// then on; go-redis sends the source again when Redis has lost it (after
	// a restart, say).
	takeScript   = redis.NewScript(takeSource)
	refundScript = redis.NewScript(refundSource)
)

// redisStore keeps each bucket in a Redis string holding its balance in
// milli-tokens.
type redisStore struct {
	client   redis.UniversalClient
	capacity retryhttp.Tokens
	ttl      int64 // milliseconds
}

func newRedisStore(client redis.UniversalClient, capacity retryhttp.Tokens, ttl time.Duration) *redisStore {
	return &redisStore{client: client, capacity: capacity, ttl: ttl.Milliseconds()}
}

func (s *redisStore) take(ctx context.Context, key string, cost retryhttp.Tokens) (bool, retryhttp.Tokens, error) {
	res, err := takeScript.Run(ctx, s.client, []string{key}, int64(cost), int64(s.capacity), s.ttl).Int64Slice()
	if err != nil {
		return false, 0, err
	}
	if len(res) != 2 {
		return false, 0, fmt.Errorf("redisbudget: take script returned %d values, want 2", len(res))
	}
	return res[0] == 1, retryhttp.Tokens(res[1]), nil
}

func (s *redisStore) refund(ctx context.Context, key string, amount retryhttp.Tokens) (retryhttp.Tokens, error) {
	n, err := refundScript.Run(ctx, s.client, []string{key}, int64(amount), int64(s.capacity), s.ttl).Int64()
	return retryhttp.Tokens(n), err
}

func (s *redisStore) balance(ctx context.Context, key string) (retryhttp.Tokens, error) {
	v, err := s.client.Get(ctx, key).Result()
	if errors.Is(err, redis.Nil) {
		return s.capacity, nil
	}
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("redisbudget: bucket %q holds %q, not a balance", key, v)
	}
	return min(max(retryhttp.Tokens(n), 0), s.capacity), nil
}

func (s *redisStore) ping(ctx context.Context) error {
	return s.client.Ping(ctx).Err()
}

// load loads the scripts into Redis (every shard of a Cluster), which also
// opens a pooled connection, so that a process's first retries find both.
func (s *redisStore) load(ctx context.Context) error {
	if err := takeScript.Load(ctx, s.client).Err(); err != nil {
		return err
	}
	return refundScript.Load(ctx, s.client).Err()
}
