// Package hosts is the worker's side of environments on many hosts
// (issue 28): which environment images this worker's Docker daemon holds,
// and building one it lacks from the source kept in the state store
// before a call runs in it.
//
// A Holder lists the images it holds (by tag, airlock/env-NAME:HASH, or
// airlock/env-NAME.NS:HASH under a namespace) for the queue worker's
// heartbeat to advertise (queue.WorkerConfig.Environments), so jobs for
// those environments come to it. A job that reaches a worker that lacks
// the image (no live worker held it) is built first: Engine wraps the
// worker's engine, loads the stored source (environments.Registry.
// LoadSource), builds it with builder.Manager.Materialize (the same
// build container, commit and checks as `airlock env build`, without
// touching the environment's record), and sends the caller `building`
// events (core.EventBuilding) while it builds. One build per image runs at
// a time; other calls for it wait for it.
//
// The namespace lets two workers share one Docker daemon and still hold
// different images (a test, or two deployments on one host): each tags
// and looks for its own.
package hosts
