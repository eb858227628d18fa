package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisPending is a PendingStore in Redis: pending approvals survive an API
// restart and are visible to every API process sharing the Redis. (The
// paused run itself still lives in the process that started it.)
type RedisPending struct {
	rdb    redis.UniversalClient
	prefix string
	ttl    time.Duration
}

// takeScript removes and returns one field atomically, so a token is taken
// exactly once however many callers race for it.
var takeScript = redis.NewScript(`
local v = redis.call('HGET', KEYS[1], ARGV[1])
if v then redis.call('HDEL', KEYS[1], ARGV[1]) end
return v`)

// NewRedisPending returns a store under prefix (e.g. "airlock:{agent}")
// whose records expire after ttl (0: 24h).
func NewRedisPending(rdb redis.UniversalClient, prefix string, ttl time.Duration) *RedisPending {
	if ttl <= 0 {
		ttl = 24 * time.Hour
	}
	if prefix == "" {
		prefix = "airlock:{agent}"
	}
	return &RedisPending{rdb: rdb, prefix: prefix, ttl: ttl}
}

// key is the hash of one run's pending approvals (token → JSON).
func (s *RedisPending) key(runID string) string { return s.prefix + ":pending:" + runID }

// Put records p.
func (s *RedisPending) Put(ctx context.Context, p Pending) error {
	b, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("agent: encode pending approval: %w", err)
	}
	k := s.key(p.RunID)
	pipe := s.rdb.TxPipeline()
	pipe.HSet(ctx, k, p.Token, b)
	pipe.Expire(ctx, k, s.ttl)
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("agent: store pending approval: %w", err)
	}
	return nil
}

// Take removes and returns the pending approval, or ErrNotPending.
func (s *RedisPending) Take(ctx context.Context, runID, token string) (Pending, error) {
	v, err := takeScript.Run(ctx, s.rdb, []string{s.key(runID)}, token).Text()
	if errors.Is(err, redis.Nil) {
		return Pending{}, ErrNotPending
	}
	if err != nil {
		return Pending{}, fmt.Errorf("agent: take pending approval: %w", err)
	}
	var p Pending
	if err := json.Unmarshal([]byte(v), &p); err != nil {
		return Pending{}, fmt.Errorf("agent: decode pending approval: %w", err)
	}
	return p, nil
}

// List returns a run's pending approvals, oldest first.
func (s *RedisPending) List(ctx context.Context, runID string) ([]Pending, error) {
	m, err := s.rdb.HGetAll(ctx, s.key(runID)).Result()
	if err != nil {
		return nil, fmt.Errorf("agent: list pending approvals: %w", err)
	}
	out := make([]Pending, 0, len(m))
	for _, v := range m {
		var p Pending
		if err := json.Unmarshal([]byte(v), &p); err != nil {
			return nil, fmt.Errorf("agent: decode pending approval: %w", err)
		}
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Created.Before(out[j].Created) })
	return out, nil
}

// DeleteRun forgets every pending approval of a run.
func (s *RedisPending) DeleteRun(ctx context.Context, runID string) error {
	if err := s.rdb.Del(ctx, s.key(runID)).Err(); err != nil {
		return fmt.Errorf("agent: delete pending approvals: %w", err)
	}
	return nil
}
