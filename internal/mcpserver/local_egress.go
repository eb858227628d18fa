package mcpserver

import (
	"errors"

	"github.com/airlock-dev/airlock/dispatcher"
)

// LocalOptions are the optional settings of a local Backend.
type LocalOptions struct {
	// Egress, when set, returns the network policy (the canonical form
	// of an egress.Policy, "" for none) of owner's sessions, narrowed by
	// the egress list of the session's environment (nil: none): the key's
	// egress= or a local command's --egress (issue 29), as the REST API's
	// session routes apply it. One-shot calls get theirs from the
	// dispatcher.
	Egress func(owner string, envEgress []string) string
	// Environments resolves a session-wide environment (nil: the
	// built-in ones only).
	Environments dispatcher.EnvironmentResolver
	// Snapshots, when set, gives the MCP sessions the snapshot_session and
	// fork_session tools (issue 30), as `airlock mcp --server` has them.
	Snapshots *SnapshotOptions
}

// SnapshotOptions is what snapshot_session and fork_session need of a
// local stack: the worker's snapshots (the jobs client) and the store the
// fork's passing snapshot is deleted from.
type SnapshotOptions struct {
	Snapshotter Snapshotter
	Store       SnapshotDeleter
}

// NewLocalWith is NewLocal with options.
func NewLocalWith(disp Dispatcher, exec dispatcher.Executor, opts LocalOptions) (Backend, error) {
	be, err := NewLocal(disp, exec)
	if err != nil {
		return nil, err
	}
	l, ok := be.(*local)
	if !ok {
		return nil, errors.New("mcpserver: local backend: unexpected type")
	}
	l.egress, l.envs = opts.Egress, opts.Environments
	if o := opts.Snapshots; o != nil && o.Snapshotter != nil && o.Store != nil {
		l.snaps = &localSnaps{snap: o.Snapshotter, store: o.Store}
	}
	return l, nil
}
