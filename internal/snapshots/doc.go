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
package snapshots
