package state

import (
	"context"
	"errors"
	"time"

	"github.com/airlock-dev/airlock/core"
)

// Errors every backend returns, matched with errors.Is. Each carries a
// core.Code, so the API maps them without knowing this package.
var (
	// ErrNotFound: no such record or log, or it has expired.
	ErrNotFound = core.E("state", core.ErrNotFound, errors.New("not found"))
	// ErrConflict: a conditional write found another version (IfVersion),
	// or a create found the record already there.
	ErrConflict = core.E("state", core.ErrConflict, errors.New("version conflict"))
	// ErrTooLarge: a value is over the backend's size bound.
	ErrTooLarge = core.E("state", core.ErrTooLarge, errors.New("value too large"))
	// ErrLimit: a counter would pass its limit (Add).
	ErrLimit = core.E("state", core.ErrQuota, errors.New("limit reached"))
	// ErrUnavailable: the backend cannot be reached or refuses writes
	// (for example a Redis at maxmemory). Nothing was written.
	ErrUnavailable = core.E("state", core.ErrUnavailable, errors.New("state store unavailable"))
)

// Key names one record, log or counter: a kind ("session", "run",
// "artifact", "batch", "notebook", "idem", ...), the owner it belongs to
// (the API key's owner name; "" for server-wide state) and an id unique
// within kind and owner.
type Key struct {
	Kind  string
	Owner string
	ID    string
}

// Item is one stored record.
type Item struct {
	Key   Key
	Value []byte
	// Version increases on every write of the record, starting at 1.
	Version int64
	// Expires is when the record goes away; zero means never.
	Expires time.Time
}

// PutOptions conditions and bounds one Put.
type PutOptions struct {
	// TTL makes the record expire TTL after this write; 0 keeps it until
	// deleted. Backends may impose a maximum.
	TTL time.Duration
	// IfVersion, when set, makes the write conditional: -1 means the
	// record must not exist (create), a positive value means the record's
	// current Version must equal it (compare and swap). 0 writes
	// unconditionally. A failed condition returns ErrConflict.
	IfVersion int64
	// Lazy lets the backend answer before the write is durable, for
	// records whose loss costs little (a session's last-used time): it is
	// visible at once to every later read, conditions and versions work as
	// for any write, but a crash of the process (or the machine) within
	// the backend's flush interval may lose it. The embedded store keeps
	// lazy writes in memory and commits them with the next write or within
	// BoltOptions.LazyFlush (default 1 s), so a touch costs no fsync;
	// Redis and the memory store write them like any other.
	Lazy bool
}

// Entry is one entry of a log. Seq numbers start at 1 and are dense.
type Entry struct {
	Seq  int64
	Data []byte
}

// Store is the durable state store. Every method is safe for concurrent
// use by any number of processes sharing the backend (Redis) or goroutines
// of the one process holding it (Bolt).
type Store interface {
	// Put writes a record and returns its new Version.
	Put(ctx context.Context, k Key, value []byte, opt PutOptions) (int64, error)
	// Get reads a record; a missing or expired one is ErrNotFound.
	Get(ctx context.Context, k Key) (Item, error)
	// Delete removes a record; a missing one is not an error. With
	// ifVersion > 0 it deletes only that version (else ErrConflict).
	Delete(ctx context.Context, k Key, ifVersion int64) error
	// List returns up to limit live records of kind and owner, ordered by
	// id; after, when not "", starts after that id (paging).
	List(ctx context.Context, kind, owner, after string, limit int) ([]Item, error)

	// Append adds data to the log k and returns its Seq. The log keeps at
	// most maxLen entries (older ones are trimmed; 0 means the backend's
	// bound) and expires ttl after the last append (0: never).
	Append(ctx context.Context, k Key, data []byte, maxLen int, ttl time.Duration) (int64, error)
	// Range returns up to limit entries of log k with Seq > after, oldest
	// first. When there are none and wait > 0, it blocks up to wait (or
	// until ctx is done) for the next append from any process, then
	// returns what arrived; an empty result is not an error.
	Range(ctx context.Context, k Key, after int64, limit int, wait time.Duration) ([]Entry, error)
	// DeleteLog removes log k.
	DeleteLog(ctx context.Context, k Key) error

	// Add changes counter k by delta and returns the new value. With
	// limit > 0 an increase that would take the value above limit is not
	// applied and returns ErrLimit (with the unchanged value). A counter
	// that reaches 0 or less is removed. ttl (when > 0) is refreshed on
	// every change.
	Add(ctx context.Context, k Key, delta, limit int64, ttl time.Duration) (int64, error)

	// Ping reports whether the backend is reachable and accepts writes.
	Ping(ctx context.Context) error
	// Close releases the backend.
	Close() error
}

// DefaultMaxLogLen is the log length bound Append applies when its maxLen
// is 0.
const DefaultMaxLogLen = 10000
