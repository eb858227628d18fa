package snapshots

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/state"
)

// State store kinds.
const (
	kindMeta  = "snapshot"
	kindChunk = "snapchunk"
	kindUsage = "snapusage"
)

// ChunkBytes is the most one stored chunk holds (under
// state.MaxValueSize).
const ChunkBytes = 4 << 20

// listMax bounds how many snapshots of one owner List reads.
const listMax = 1000

// Config bounds the snapshots.
type Config struct {
	// MaxBytes bounds one snapshot (namespace and work folder).
	MaxBytes int64
	// Quota bounds the bytes of every snapshot one owner keeps.
	Quota int64
}

// DefaultConfig is 1 GiB per snapshot and 4 GiB per owner.
func DefaultConfig() Config { return Config{MaxBytes: 1 << 30, Quota: 4 << 30} }

// Part is one stored part of a snapshot.
type Part struct {
	Size   int64 `json:"size"`
	Chunks int   `json:"chunks"`
}

// Meta is a snapshot's record: whose, of which session, what it holds.
type Meta struct {
	ID      string    `json:"id"`
	Owner   string    `json:"owner"`
	Session string    `json:"session"`
	Created time.Time `json:"created"`
	// Bytes is the stored size of every part together.
	Bytes int64           `json:"bytes"`
	Parts map[string]Part `json:"parts"`
	// Report is what the sandbox saved and skipped.
	Report core.SnapshotReport `json:"report"`
	// Environment and Limits are the session's.
	Environment string      `json:"environment"`
	Limits      core.Limits `json:"limits"`
	Background  bool        `json:"background,omitempty"`
	// Calls is the session's call log when it was taken.
	Calls []Call `json:"calls"`
	// Hidden snapshots (a fork's) are not listed.
	Hidden bool `json:"hidden,omitempty"`
	// Internal snapshots (a hibernated session's, see Resumes) are hidden,
	// not counted in the owner's quota (one per session, each within
	// MaxBytes) and expire with their session (TTL).
	Internal bool `json:"internal,omitempty"`
}

// Store keeps snapshots in a state store. It is safe for concurrent use.
type Store struct {
	st  state.Store
	cfg Config
	now func() time.Time
}

// New returns the snapshots over st with cfg's bounds; now is the clock
// (nil: time.Now).
func New(st state.Store, cfg Config, now func() time.Time) *Store {
	if now == nil {
		now = time.Now
	}
	return &Store{st: st, cfg: cfg, now: now}
}

// Config returns the store's bounds.
func (s *Store) Config() Config { return s.cfg }

func metaKey(owner, id string) state.Key { return state.Key{Kind: kindMeta, Owner: owner, ID: id} }
func usageKey(owner string) state.Key    { return state.Key{Kind: kindUsage, Owner: owner, ID: "bytes"} }
func chunkKey(owner, id, part string, n int) state.Key {
	return state.Key{Kind: kindChunk, Owner: owner, ID: fmt.Sprintf("%s/%s/%06d", id, part, n)}
}

// notFound is the error of a snapshot that does not exist for its owner.
func notFound(id string) error {
	return core.Errorf("snapshots", core.ErrNotFound, fmt.Sprintf("snapshot %q not found", id))
}

// Get returns owner's snapshot id; another owner's is not found.
func (s *Store) Get(ctx context.Context, owner, id string) (Meta, error) {
	it, err := s.st.Get(ctx, metaKey(owner, id))
	if errors.Is(err, state.ErrNotFound) {
		return Meta{}, notFound(id)
	}
	if err != nil {
		return Meta{}, fmt.Errorf("snapshots: read %s: %w", id, err)
	}
	var m Meta
	if err := json.Unmarshal(it.Value, &m); err != nil || m.Owner != owner {
		return Meta{}, notFound(id)
	}
	return m, nil
}

// List returns owner's snapshots (not the hidden ones), oldest id first.
func (s *Store) List(ctx context.Context, owner string) ([]Meta, error) {
	items, err := s.st.List(ctx, kindMeta, owner, "", listMax)
	if err != nil {
		return nil, fmt.Errorf("snapshots: list: %w", err)
	}
	out := []Meta{}
	for _, it := range items {
		var m Meta
		if json.Unmarshal(it.Value, &m) == nil && m.Owner == owner && !m.Hidden {
			out = append(out, m)
		}
	}
	return out, nil
}

// Usage is the bytes owner's snapshots hold (and those being written).
func (s *Store) Usage(ctx context.Context, owner string) (int64, error) {
	return s.st.Add(ctx, usageKey(owner), 0, 0, 0)
}

// Delete removes owner's snapshot id: its chunks, its record, its bytes
// from the owner's usage.
func (s *Store) Delete(ctx context.Context, owner, id string) error {
	m, err := s.Get(ctx, owner, id)
	if err != nil {
		return err
	}
	// An internal snapshot goes lazily (state.LazyDeleter): one a crash
	// keeps expires with its session all the same.
	if err := state.DeleteWith(ctx, s.st, metaKey(owner, id), 0, m.Internal); err != nil {
		return fmt.Errorf("snapshots: delete %s: %w", id, err)
	}
	for part, p := range m.Parts {
		for n := range p.Chunks {
			_ = state.DeleteWith(ctx, s.st, chunkKey(owner, id, part, n), 0, m.Internal)
		}
	}
	if !m.Internal {
		_, _ = s.st.Add(ctx, usageKey(owner), -m.Bytes, 0, 0)
	}
	return nil
}

// Read calls fn with each chunk of owner's snapshot id's part, in order.
func (s *Store) Read(ctx context.Context, m Meta, part string, fn func(chunk []byte) error) error {
	p, ok := m.Parts[part]
	if !ok {
		return core.Errorf("snapshots", core.ErrInternal, fmt.Sprintf("snapshot %s has no %s part", m.ID, part))
	}
	var got int64
	for n := range p.Chunks {
		it, err := s.st.Get(ctx, chunkKey(m.Owner, m.ID, part, n))
		if err != nil {
			return fmt.Errorf("snapshots: read %s %s chunk %d: %w", m.ID, part, n, err)
		}
		got += int64(len(it.Value))
		if err := fn(it.Value); err != nil {
			return err
		}
	}
	if got != p.Size {
		return core.Errorf("snapshots", core.ErrInternal, fmt.Sprintf("snapshot %s part %s is %d bytes, its record says %d", m.ID, part, got, p.Size))
	}
	return nil
}

// Writer stores one snapshot's parts as they come.
type Writer struct {
	s     *Store
	owner string
	id    string
	parts map[string]Part
	buf   []byte
	part  string
	bytes int64 // stored and counted in the owner's usage
	// ttl, for an internal snapshot, expires its chunks and record; its
	// bytes are not counted in the owner's usage.
	ttl      time.Duration
	internal bool
	// lazyBytes are the bytes of an internal snapshot written lazily so
	// far (see store).
	lazyBytes int64
}

// maxLazyBytes bounds the chunk bytes an internal snapshot writes lazily
// (state.PutOptions.Lazy, held in the embedded store's memory until the
// next synced write); past it chunks are written synced.
const maxLazyBytes = ChunkBytes

// Create starts snapshot id of owner; Commit or Abort it. An id that
// exists is a conflict.
func (s *Store) Create(ctx context.Context, owner, id string) (*Writer, error) {
	if _, err := s.st.Get(ctx, metaKey(owner, id)); err == nil {
		return nil, core.Errorf("snapshots", core.ErrConflict, fmt.Sprintf("snapshot %q exists", id))
	}
	return &Writer{s: s, owner: owner, id: id, parts: map[string]Part{}}, nil
}

// CreateInternal starts an internal snapshot id of owner (see
// Meta.Internal) that expires after ttl; Commit or Abort it.
func (s *Store) CreateInternal(ctx context.Context, owner, id string, ttl time.Duration) (*Writer, error) {
	w, err := s.Create(ctx, owner, id)
	if err != nil {
		return nil, err
	}
	w.internal, w.ttl = true, max(ttl, time.Minute)
	return w, nil
}

// Write adds chunk to part (parts come one after the other). Past the
// snapshot's bound it is core.ErrTooLarge, past the owner's quota
// core.ErrQuota; the caller then aborts.
func (w *Writer) Write(ctx context.Context, part string, chunk []byte) error {
	if part != w.part {
		if err := w.flush(ctx); err != nil {
			return err
		}
		w.part = part
		if _, ok := w.parts[part]; !ok {
			w.parts[part] = Part{}
		}
	}
	if max := w.s.cfg.MaxBytes; max > 0 && w.bytes+int64(len(w.buf)+len(chunk)) > max {
		return core.Errorf("snapshots", core.ErrTooLarge, fmt.Sprintf("the snapshot is over its %d-byte bound", max))
	}
	w.buf = append(w.buf, chunk...)
	for len(w.buf) >= ChunkBytes {
		if err := w.store(ctx, w.buf[:ChunkBytes]); err != nil {
			return err
		}
		w.buf = append(w.buf[:0], w.buf[ChunkBytes:]...)
	}
	return nil
}

// flush stores what is buffered of the current part.
func (w *Writer) flush(ctx context.Context) error {
	if len(w.buf) == 0 {
		return nil
	}
	err := w.store(ctx, w.buf)
	w.buf = w.buf[:0]
	return err
}

// store writes one chunk of the current part, counted in the quota first.
func (w *Writer) store(ctx context.Context, b []byte) error {
	n := int64(len(b))
	if max := w.s.cfg.MaxBytes; max > 0 && w.bytes+n > max {
		return core.Errorf("snapshots", core.ErrTooLarge, fmt.Sprintf("the snapshot is over its %d-byte bound", max))
	}
	if w.internal {
		// not counted: bounded by MaxBytes, one per session, expiring
	} else if _, err := w.s.st.Add(ctx, usageKey(w.owner), n, w.s.cfg.Quota, 0); err != nil {
		if errors.Is(err, state.ErrLimit) {
			return core.Errorf("snapshots", core.ErrQuota, fmt.Sprintf("quota: this key's snapshots would hold more than %d bytes; delete some first", w.s.cfg.Quota))
		}
		return fmt.Errorf("snapshots: count %s: %w", w.id, err)
	}
	w.bytes += n
	p := w.parts[w.part]
	// An internal snapshot (a session's automatic one, or its
	// hibernation) is durable once the resume record naming it is: its
	// chunks and record are written lazily, so the resume record's one
	// synced write commits them all (one disk sync per snapshot, not one
	// per chunk); a crash before it leaves at most chunks that expire.
	lazy := w.internal && w.lazyBytes+n <= maxLazyBytes
	if lazy {
		w.lazyBytes += n
	}
	if _, err := w.s.st.Put(ctx, chunkKey(w.owner, w.id, w.part, p.Chunks), b, state.PutOptions{TTL: w.ttl, Lazy: lazy}); err != nil {
		return fmt.Errorf("snapshots: write %s: %w", w.id, err)
	}
	p.Chunks++
	p.Size += n
	w.parts[w.part] = p
	return nil
}

// Commit stores m as the snapshot's record (ID, Owner, Bytes and Parts
// filled in) and returns it.
func (w *Writer) Commit(ctx context.Context, m Meta) (Meta, error) {
	if err := w.flush(ctx); err != nil {
		return Meta{}, err
	}
	m.ID, m.Owner, m.Bytes, m.Parts = w.id, w.owner, w.bytes, w.parts
	if w.internal {
		m.Internal, m.Hidden = true, true
	}
	if m.Created.IsZero() {
		m.Created = w.s.now()
	}
	b, err := json.Marshal(m)
	if err == nil && len(b) > state.MaxValueSize {
		m.Calls = nil // the call log does not fit beside the record
		b, err = json.Marshal(m)
	}
	if err != nil {
		return Meta{}, fmt.Errorf("snapshots: encode %s: %w", w.id, err)
	}
	if _, err := w.s.st.Put(ctx, metaKey(w.owner, w.id), b, state.PutOptions{IfVersion: -1, TTL: w.ttl, Lazy: w.internal}); err != nil {
		return Meta{}, fmt.Errorf("snapshots: record %s: %w", w.id, err)
	}
	return m, nil
}

// Abort removes what was stored and gives its bytes back.
func (w *Writer) Abort(ctx context.Context) {
	for part, p := range w.parts {
		for n := range p.Chunks {
			_ = state.DeleteWith(ctx, w.s.st, chunkKey(w.owner, w.id, part, n), 0, w.internal)
		}
	}
	if w.bytes > 0 && !w.internal {
		_, _ = w.s.st.Add(ctx, usageKey(w.owner), -w.bytes, 0, 0)
	}
}
