package main

import (
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/airlock-dev/airlock/queue"
	"github.com/airlock-dev/airlock/state"
)

// stateKeyPrefix puts the state store's keys next to the queue's in Redis.
const stateKeyPrefix = "airlock:state:"

// openState returns the durable state store of `airlock serve`: with a
// Redis client (--redis) a state.Redis on the same Redis, so every replica
// shares session records, artifacts and idempotency keys; without, a Bolt
// file under dataDir, so a restart keeps them.
func openState(rdb *redis.Client, dataDir string) (state.Store, error) {
	if rdb != nil {
		return state.NewRedis(rdb, stateKeyPrefix), nil
	}
	if dataDir == "" {
		dataDir = state.DefaultDataDir()
	}
	b, err := state.OpenBolt(dataDir)
	if err != nil {
		return nil, fmt.Errorf("open state under --data-dir %s: %w", dataDir, err)
	}
	return b, nil
}

// stateRedis is the Redis client of serve's state store (nil without
// --redis); the store's Close does not close it, the process's exit does.
func stateRedis(url string) (*redis.Client, error) {
	if url == "" {
		return nil, nil
	}
	rdb, err := queue.NewRedisClient(url, 2*time.Second)
	if err != nil {
		return nil, fmt.Errorf("state: %w", err)
	}
	return rdb, nil
}
