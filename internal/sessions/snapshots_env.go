package sessions

import (
	"context"
	"fmt"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/environments"
	"github.com/airlock-dev/airlock/internal/sessionrecords"
)

// EnvSnapshotter is a Snapshotter that keeps the session's environment
// with the snapshot (*jobs.Client), so a restore or a fork opens its
// session in the same environment.
type EnvSnapshotter interface {
	// SnapshotSessionIn is SnapshotSession of a session in environment env.
	SnapshotSessionIn(ctx context.Context, owner, id, snapID, env string, limits core.Limits, background, hidden bool) (core.SnapshotReport, error)
}

// EnvironmentFunc resolves the environment name for owner (the API's
// resolver: unknown is not found, one the key may no longer use forbidden).
type EnvironmentFunc func(ctx context.Context, owner, name string) (environments.Target, error)

// SetEnvironments makes restores and forks open their session in the
// snapshot's environment, resolved by f. Without it they open in the
// built-in python environment.
func (s *Snapshots) SetEnvironments(f EnvironmentFunc) { s.resolve = f }

// snapshotSession saves rec as snapshot id, with its environment when the
// backend keeps it.
func (s *Snapshots) snapshotSession(ctx context.Context, r sessionrecords.Record, id string, hidden bool) (core.SnapshotReport, error) {
	if es, ok := s.snap.(EnvSnapshotter); ok && r.Environment != "" {
		return es.SnapshotSessionIn(ctx, r.Owner, r.ID, id, r.Environment, r.Limits, r.Background, hidden)
	}
	return s.snap.SnapshotSession(ctx, r.Owner, r.ID, id, r.Limits, r.Background, hidden)
}

// environmentOf is the environment a session restored from a snapshot
// taken in environment name opens in: the zero Target (built-in python)
// for python or none, else name as resolved for owner now; without a
// resolver another environment is refused.
func (s *Snapshots) environmentOf(ctx context.Context, owner, name string) (environments.Target, error) {
	if name == "" || name == environments.Python {
		return environments.Target{}, nil
	}
	if s.resolve == nil { // never restored into the wrong image
		return environments.Target{}, core.Errorf("sessions", core.ErrUnavailable, fmt.Sprintf("this server cannot restore sessions of environment %q", name))
	}
	return s.resolve(ctx, owner, name)
}
