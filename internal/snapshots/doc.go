// Package snapshots keeps session snapshots (issue 30) in the state store
// under their owner: each part (the namespace, saved with dill inside the
// owner's sandbox, and the work folder's tar) in chunks of at most
// ChunkBytes, a record of what was saved and skipped, the session's call
// log, environment and limits. A snapshot is bounded (Config.MaxBytes) and
// so is what an owner keeps (Config.Quota, refused with core.ErrQuota).
// The host stores these bytes and never unpickles them.
//
// It also keeps each session's call log (code, status, bounded outputs and
// their digests), which a snapshot carries, a replay runs again and the
// notebook export writes as cells; and Keeper, the worker's engine wrapper
// that takes snapshots and restores them.
//
// Sessions outlive their container through the same parts: a Keeper with
// EnableResume saves a session into an internal snapshot (Meta.Internal:
// hidden, outside the quota, expiring with the session) when it is idle
// (hibernation), when its worker stops (HibernateAll, the queue worker's
// OnStop) and after each call that ran (coalesced, within a size bound);
// the session's Resume record names the latest. The jobs client, finding a
// session gone before its call reached it, has a worker open it again
// under the same id from that record (the one wake path for all three).
package snapshots
