package redisbudget

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/retryhttp/retryhttp/budget"
)

// A store holds the shared buckets. Each method touches one key. Amounts
// are in milli-tokens; a missing bucket is a full one.
//
// An error that wraps a *keyError says that the key cannot hold a bucket
// (it holds a value of another type): that bucket is unusable, and the
// store is otherwise well. Any other error says that the store is
// unavailable.
type store interface {
	// take withdraws cost from the bucket at key if it holds that much. It
	// reports whether it did and the balance afterwards.
	take(ctx context.Context, key string, cost budget.Millitokens) (ok bool, balance budget.Millitokens, err error)
	// refund puts amount back into the bucket at key, up to its capacity,
	// and returns the balance afterwards.
	refund(ctx context.Context, key string, amount budget.Millitokens) (budget.Millitokens, error)
	// balance returns what the bucket at key holds.
	balance(ctx context.Context, key string) (budget.Millitokens, error)
	// probe checks that the store runs the other calls' commands and
	// accepts their writes to the bucket at key, leaving the bucket as it
	// was.
	probe(ctx context.Context, key string) error
	// load readies the store for the other calls.
	load(ctx context.Context) error
}

var (
	//go:embed take.lua
	takeSource string
	//go:embed refund.lua
	refundSource string
	//go:embed probe.lua
	probeSource string

	// The scripts are loaded into Redis on first use and run by hash from
	// then on; go-redis sends the source again when Redis has lost it (after
	// a restart, say).
	takeScript   = redis.NewScript(takeSource)
	refundScript = redis.NewScript(refundSource)
	probeScript  = redis.NewScript(probeSource)
)

// A keyError is the store refusing a command because of what the key holds,
// not because of the store's health.
type keyError struct {
	key string
	err error
}

func (e *keyError) Error() string {
	return fmt.Sprintf("redisbudget: the key %q holds no bucket: %v", e.key, e.err)
}

func (e *keyError) Unwrap() error { return e.err }

// isKeyError reports whether err is a key's fault (see store).
func isKeyError(err error) bool {
	var ke *keyError
	return errors.As(err, &ke)
}

// keyFault returns err as a *keyError if it is Redis's WRONGTYPE, the reply
// to a command on a key of another type, which Redis gives a script's
// command as it gives any other. Redis names the kind of an error reply by
// its first word, and go-redis has no type per kind, so this reads the word
// with go-redis's HasErrorPrefix. Every other error reply (READONLY, OOM,
// BUSY, LOADING, MASTERDOWN, NOPERM, a script error) is Redis unable to do
// what every take needs, and stays as it is.
func keyFault(key string, err error) error {
	if redis.HasErrorPrefix(err, "WRONGTYPE") {
		return &keyError{key: key, err: err}
	}
	return err
}

// redisStore keeps each bucket in a Redis string holding its balance in
// milli-tokens.
type redisStore struct {
	client   redis.UniversalClient
	capacity budget.Millitokens
	ttl      int64 // milliseconds
}

func newRedisStore(client redis.UniversalClient, capacity budget.Millitokens, ttl time.Duration) *redisStore {
	return &redisStore{client: client, capacity: capacity, ttl: ttl.Milliseconds()}
}

func (s *redisStore) take(ctx context.Context, key string, cost budget.Millitokens) (bool, budget.Millitokens, error) {
	res, err := takeScript.Run(ctx, s.client, []string{key}, int64(cost), int64(s.capacity), s.ttl).Int64Slice()
	if err != nil {
		return false, 0, keyFault(key, err)
	}
	if len(res) != 2 {
		return false, 0, fmt.Errorf("redisbudget: take script returned %d values, want 2", len(res))
	}
	return res[0] == 1, budget.Millitokens(res[1]), nil
}

func (s *redisStore) refund(ctx context.Context, key string, amount budget.Millitokens) (budget.Millitokens, error) {
	n, err := refundScript.Run(ctx, s.client, []string{key}, int64(amount), int64(s.capacity), s.ttl).Int64()
	return budget.Millitokens(n), keyFault(key, err)
}

func (s *redisStore) balance(ctx context.Context, key string) (budget.Millitokens, error) {
	v, err := s.client.Get(ctx, key).Result()
	if errors.Is(err, redis.Nil) {
		return s.capacity, nil
	}
	if err != nil {
		return 0, keyFault(key, err)
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, &keyError{key: key, err: fmt.Errorf("%q is not a balance", v)}
	}
	return min(max(budget.Millitokens(n), 0), s.capacity), nil
}

func (s *redisStore) probe(ctx context.Context, key string) error {
	return keyFault(key, probeScript.Run(ctx, s.client, []string{key}).Err())
}

// load loads the scripts into Redis (every shard of a Cluster), which also
// opens a pooled connection, so that a process's first retries find both.
func (s *redisStore) load(ctx context.Context) error {
	for _, script := range []*redis.Script{takeScript, refundScript, probeScript} {
		if err := script.Load(ctx, s.client).Err(); err != nil {
			return err
		}
	}
	return nil
}
