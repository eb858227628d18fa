// Package state is the durable state store behind Airlock's stateless API
// replicas: session records, runs (status, checkpoint, event log), pending
// approvals' context, artifacts, idempotency keys, batches and saved
// notebooks. Nothing that must outlive one request lives in a process's
// memory; it lives here.
//
// Store is one small interface of primitives (records with versions and
// TTLs, append-only logs with dense sequence numbers, bounded counters) with
// two backends that pass one contract suite (statetest.Run):
//
//   - Redis (NewRedis), for --redis deployments: every key of one owner
//     carries the owner as its hash tag, so multi-key operations stay in one
//     Cluster slot; sizes and lengths are bounded and every key has a TTL.
//   - Bolt (OpenBolt), an on-disk embedded store (go.etcd.io/bbolt) under a
//     data directory, for single-process `make run`.
//
// Typed views (sessions, runs, artifacts, batches, notebooks) are built on
// these primitives by the packages that own those concepts.
package state
