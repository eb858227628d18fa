package notebooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/state"
	"github.com/airlock-dev/airlock/wire"
)

// Storage bounds.
const (
	// kind is the state store kind of saved notebooks.
	kind = "notebook"
	// MaxBytes bounds a notebook as saved (the API refuses a larger PUT
	// body with 413 before it is read).
	MaxBytes = 4 << 20
	// ttl is how long a saved notebook is kept after its last save.
	ttl = 30 * 24 * time.Hour
)

// record is a saved notebook as stored: the cells as sent, and when.
type record struct {
	Cells     json.RawMessage `json:"cells"`
	UpdatedAt time.Time       `json:"updated_at"`
}

// Store keeps notebooks in a state store. It is safe for concurrent use.
type Store struct {
	st  state.Store
	now func() time.Time
}

// New returns the notebooks over st; now is the clock (nil: time.Now).
func New(st state.Store, now func() time.Time) *Store {
	if now == nil {
		now = time.Now
	}
	return &Store{st: st, now: now}
}

// key is the store key of owner's notebook of session id.
func key(owner, id string) state.Key { return state.Key{Kind: kind, Owner: owner, ID: id} }

// Get returns owner's notebook of session id; core.ErrNotFound when none
// was saved.
func (s *Store) Get(ctx context.Context, owner, id string) (wire.Notebook, error) {
	it, err := s.st.Get(ctx, key(owner, id))
	switch {
	case errors.Is(err, state.ErrNotFound):
		return wire.Notebook{}, core.Errorf("", core.ErrNotFound, "no notebook saved for this session")
	case err != nil:
		return wire.Notebook{}, fmt.Errorf("notebooks: read %s: %w", id, err)
	}
	var nb record
	out := wire.Notebook{Version: it.Version}
	err = json.Unmarshal(it.Value, &nb)
	if err == nil {
		out.UpdatedAt = nb.UpdatedAt
		err = json.Unmarshal(nb.Cells, &out.Cells)
	}
	if err != nil {
		return wire.Notebook{}, core.E("notebooks", core.ErrInternal, fmt.Errorf("decode %s: %w", id, err))
	}
	return out, nil
}

// Save stores cells (a JSON array) as owner's notebook of session id when
// version is the saved one (0 for the first save) and returns the new
// version. Another version is a *ConflictError naming the saved one;
// cells that are not an array, or a negative version, are bad_request.
func (s *Store) Save(ctx context.Context, owner, id string, cells json.RawMessage, version int64) (wire.NotebookSaved, error) {
	if b := bytes.TrimSpace(cells); len(b) == 0 || b[0] != '[' {
		return wire.NotebookSaved{}, &InvalidError{Field: "cells", msg: `"cells" must be a JSON array`}
	}
	if version < 0 {
		return wire.NotebookSaved{}, &InvalidError{Field: "version", msg: `"version" must not be negative`}
	}
	now := s.now().UTC()
	value, err := json.Marshal(record{Cells: cells, UpdatedAt: now})
	if err != nil {
		return wire.NotebookSaved{}, core.E("notebooks", core.ErrInternal, err)
	}
	cond := version
	if cond == 0 {
		cond = -1 // the first save: none may exist yet
	}
	k := key(owner, id)
	v, err := s.st.Put(ctx, k, value, state.PutOptions{TTL: ttl, IfVersion: cond})
	switch {
	case errors.Is(err, state.ErrConflict):
		var current int64
		if it, gerr := s.st.Get(ctx, k); gerr == nil {
			current = it.Version
		}
		return wire.NotebookSaved{}, &ConflictError{Current: current, Sent: version}
	case errors.Is(err, state.ErrTooLarge):
		return wire.NotebookSaved{}, core.Errorf("", core.ErrTooLarge, "the notebook is over the state store's size limit")
	case err != nil:
		return wire.NotebookSaved{}, fmt.Errorf("notebooks: save %s: %w", id, err)
	}
	return wire.NotebookSaved{Version: v, UpdatedAt: now}, nil
}

// ConflictError is a save naming another version than the saved one. It
// carries core.ErrConflict.
type ConflictError struct{ Current, Sent int64 }

// Error implements error.
func (e *ConflictError) Error() string {
	return fmt.Sprintf("notebook version conflict: the saved version is %d, the request said %d; GET the notebook and retry", e.Current, e.Sent)
}

// Unwrap makes errors.Is(err, core.ErrConflict) true.
func (e *ConflictError) Unwrap() error { return core.ErrConflict }

// ErrorDetails are the details of the API's error answer.
func (e *ConflictError) ErrorDetails() map[string]any {
	return map[string]any{"current_version": e.Current, "version": e.Sent}
}

// InvalidError is a save refused for one field. It carries
// core.ErrInvalid.
type InvalidError struct {
	Field string
	msg   string
}

// Error implements error.
func (e *InvalidError) Error() string { return e.msg }

// Unwrap makes errors.Is(err, core.ErrInvalid) true.
func (e *InvalidError) Unwrap() error { return core.ErrInvalid }

// ErrorDetails are the details of the API's error answer.
func (e *InvalidError) ErrorDetails() map[string]any { return map[string]any{"field": e.Field} }
