package main

import (
	"context"

	"github.com/airlock-dev/airlock/queue"
)

// deploymentLabeler is what a queue with Redis offers to tell deployments
// apart (queue.Redis.OpenDeploymentLabel).
type deploymentLabeler interface {
	OpenDeploymentLabel(ctx context.Context) (string, error)
}

// deploymentLabel returns the queue label of this deployment's containers
// ("name@id", the id stored in its Redis), or "" when q has none or the id
// cannot be read now (logged: this process then reaps no dead workers).
func (s *stack) deploymentLabel(ctx context.Context, q queue.Queue, name string) string {
	dl, ok := q.(deploymentLabeler)
	if !ok {
		return ""
	}
	label, err := dl.OpenDeploymentLabel(ctx)
	if err != nil {
		s.log.Warn("queue: no deployment id; this process's containers carry the bare queue name and it reaps no dead workers", "queue", name, "err", err)
		return ""
	}
	return label
}
