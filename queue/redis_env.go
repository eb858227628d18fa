package queue

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// envHolder picks, at random, a live worker advertising environment hash
// ("" when none does, or Redis cannot say: the job then goes to its lane).
func (q *Redis) envHolder(ctx context.Context, hash string) string {
	now := time.Now().UnixMilli()
	ids, err := q.rdb.ZRangeByScore(ctx, q.keys.envHolders(hash), &redis.ZRangeBy{Min: strconv.FormatInt(now, 10), Max: "+inf"}).Result()
	if err != nil || len(ids) == 0 {
		return ""
	}
	rand.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	for _, id := range ids {
		if n, err := q.rdb.Exists(ctx, q.keys.alive(id)).Result(); err == nil && n == 1 {
			return id
		}
	}
	return ""
}

// advertiseEnvironments adds the worker to the holder set of every
// environment it holds, until a little after its liveness key would
// lapse, and drops lapsed members. It rides in the heartbeat's pipeline.
func (w *redisWorker) advertiseEnvironments(ctx context.Context, pipe redis.Pipeliner) {
	if w.cfg.Environments == nil {
		return
	}
	now := time.Now()
	until := float64(now.Add(w.q.cfg.LivenessTTL).UnixMilli())
	held := w.cfg.Environments()
	for _, h := range held {
		k := w.q.keys.envHolders(h)
		pipe.ZAdd(ctx, k, redis.Z{Score: until, Member: w.cfg.ID})
		pipe.ZRemRangeByScore(ctx, k, "-inf", "("+itoa(now.UnixMilli()))
		pipe.PExpire(ctx, k, 2*w.q.cfg.LivenessTTL)
	}
	w.mu.Lock()
	w.advertised = held
	w.mu.Unlock()
}

// unadvertise removes the worker from the holder sets it joined.
func (w *redisWorker) unadvertise(ctx context.Context) {
	w.mu.Lock()
	held := w.advertised
	w.advertised = nil
	w.mu.Unlock()
	for _, h := range held {
		_ = w.q.rdb.ZRem(ctx, w.q.keys.envHolders(h), w.cfg.ID).Err()
	}
}

// Advertise runs one heartbeat now, so environments a worker just built
// reach callers without waiting for the next beat. A worker of another
// backend ignores it.
func Advertise(w Worker) {
	if rw, ok := w.(*redisWorker); ok {
		rw.beat(context.Background())
	}
}

// EnvironmentHolders lists the live workers advertising environment hash
// (for readiness checks, operators and tests).
func (q *Redis) EnvironmentHolders(ctx context.Context, hash string) ([]string, error) {
	now := time.Now().UnixMilli()
	ids, err := q.rdb.ZRangeByScore(ctx, q.keys.envHolders(hash), &redis.ZRangeBy{Min: strconv.FormatInt(now, 10), Max: "+inf"}).Result()
	if err != nil {
		return nil, fmt.Errorf("queue: list the holders of environment %s: %w", hash, err)
	}
	return ids, nil
}
