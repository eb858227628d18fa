package approvals

import (
	"context"
	"errors"
	"time"

	"github.com/airlock-dev/airlock/core"
)

// ErrNotFound is returned by Take when the token is unknown, expired or
// already taken. It carries core.ErrNotFound.
var ErrNotFound = core.E("approvals", core.ErrNotFound, errors.New("no pending approval with that token"))

// Record is one pending approval.
type Record struct {
	// Run groups records for List and DeleteRun; "" means ungrouped.
	Run string
	// Token names the record within its run.
	Token string
	// Value is the caller's encoding of the held call; the store does not
	// read it.
	Value []byte
	// Expires is when the record stops being valid; zero means the
	// store's default (Memory: never; Redis: its TTL).
	Expires time.Time
}

// Store keeps pending approvals.
type Store interface {
	// Put stores r, replacing a record with the same run and token.
	Put(ctx context.Context, r Record) error
	// Take removes and returns the record of (run, token) atomically; it
	// returns an error wrapping ErrNotFound when there is none (or it
	// expired, or another Take won).
	Take(ctx context.Context, run, token string) (Record, error)
	// List returns the live records of a run, in the order they were put.
	List(ctx context.Context, run string) ([]Record, error)
	// DeleteRun forgets every record of a run.
	DeleteRun(ctx context.Context, run string) error
}
