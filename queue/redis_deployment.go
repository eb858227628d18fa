package queue

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// deployment is the key holding the deployment id of this queue's Redis.
func (k keyspace) deployment() string { return k.base + ":deployment" }

// Deployment returns the id of the deployment this queue belongs to: a
// random id stored once in the queue's Redis (SET NX, no expiry), so every
// process sharing the Redis and queue name gets the same one and another
// deployment (its own Redis, on the same Docker host) another. Reapers of
// dead workers' sandbox containers judge only containers labelled with
// their own deployment: a worker of another deployment has no liveness key
// in this Redis and would otherwise look dead. A Redis that lost its data
// hands out a new id; containers labelled with the old one are then left
// to their own dead man's switch and expiry (never reaped by mistake).
func (q *Redis) Deployment(ctx context.Context) (string, error) {
	key := q.keys.deployment()
	id := randomID(8)
	if err := q.rdb.SetNX(ctx, key, id, 0).Err(); err != nil {
		return "", fmt.Errorf("%w: deployment id: %w", ErrUnavailable, err)
	}
	got, err := q.rdb.Get(ctx, key).Result()
	if errors.Is(err, redis.Nil) {
		return "", fmt.Errorf("%w: deployment id: the key vanished right after it was set", ErrUnavailable)
	}
	if err != nil {
		return "", fmt.Errorf("%w: deployment id: %w", ErrUnavailable, err)
	}
	return got, nil
}

// deploymentTimeout bounds asking Redis for the deployment id at start.
const deploymentTimeout = 5 * time.Second

// DeploymentLabel is the value of a container's queue label
// (sandbox.LabelQueue) for queue name in deployment id: "name@id".
func DeploymentLabel(name, id string) string { return name + "@" + id }

// OpenDeploymentLabel asks q's Redis for the deployment id (bounded) and
// returns the queue label of its containers.
func (q *Redis) OpenDeploymentLabel(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, deploymentTimeout)
	defer cancel()
	id, err := q.Deployment(ctx)
	if err != nil {
		return "", err
	}
	return DeploymentLabel(q.cfg.Name, id), nil
}
