// Package state is the durable state store behind Airlock's stateless API
// replicas: session records, runs (status, checkpoint, event log), pending
// approvals' context, artifacts, idempotency keys, batches and saved
// notebooks. Nothing that must outlive one request lives in a process's
// memory; it lives here.
//
// Store is one small interface of primitives (records with versions and
// TTLs, append-only logs with dense sequence numbers, bounded counters) with
// backends that pass one contract suite (statetest.Run):
//
//   - Redis (NewRedis), for --redis deployments: every key of one owner
//     carries the owner as its hash tag, so multi-key operations stay in one
//     Cluster slot; sizes and lengths are bounded and every key has the TTL
//     its caller gave. Each operation is one command (a Lua script, XRANGE
//     or XREAD); List is one ZRANGEBYLEX plus one pipelined round trip.
//     A Redis at maxmemory refuses writes before any is made (ErrUnavailable).
//   - Bolt (OpenBolt), an on-disk embedded store (go.etcd.io/bbolt) under a
//     data directory (DefaultDataDir), for single-process `make run`. The
//     file is locked; a second process opening it fails after about a
//     second with an error naming the file. Concurrent writes are group
//     committed: one transaction (one fsync) for all writes queued while
//     the previous one synced.
//   - Memory (NewMemory), for unit tests of the packages built on the store.
//
// Bounds shared by all: a value or log entry is at most MaxValueSize bytes
// (else ErrTooLarge); a log keeps at most its maxLen entries
// (DefaultMaxLogLen by default), trimmed exactly.
//
// Typed views (sessions, runs, artifacts, batches, notebooks) are built on
// these primitives by the packages that own those concepts.
package state
