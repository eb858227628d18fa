package environments

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/state"
)

// Status is the state of an environment's latest build.
type Status string

// The statuses of a record.
const (
	StatusBuilding Status = "building" // a build runs; Image (if set) is the previous good one
	StatusReady    Status = "ready"    // Image is built from the current spec and checked
	StatusFailed   Status = "failed"   // the latest build failed; no image is served
)

// Check is the outcome of one image check.
type Check struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail,omitempty"`
}

// Record is an environment as the registry keeps it. Image, ImageID and
// Hash name the image calls use: set only by a build that passed its
// checks, cleared when a later build of a changed spec fails, so a call
// never runs code the current spec no longer describes.
type Record struct {
	Name    string `json:"name"`
	Builtin bool   `json:"builtin,omitempty"`
	Base    string `json:"base,omitempty"`
	// Spec is the spec of the latest build.
	Spec *Spec `json:"spec,omitempty"`
	// Hash is the content hash of the image calls use ("" when none).
	Hash string `json:"hash,omitempty"`
	// Image is its tag, airlock/env-NAME:HASH.
	Image   string `json:"image,omitempty"`
	ImageID string `json:"image_id,omitempty"`
	// BaseImage is the ID of the base image it was built from.
	BaseImage string `json:"base_image,omitempty"`
	Status    Status `json:"status"`
	// Packages lists what the spec installed, with versions
	// (name=version for apt, name==version for pip).
	Packages []string `json:"packages,omitempty"`
	// SizeBytes is the image's size, base included; AddedBytes what the
	// environment added to its base.
	SizeBytes    int64   `json:"size_bytes,omitempty"`
	AddedBytes   int64   `json:"added_bytes,omitempty"`
	BuildSeconds float64 `json:"build_seconds,omitempty"`
	// BuildID names the latest build's event log (Registry.Events).
	BuildID string  `json:"build_id,omitempty"`
	Checks  []Check `json:"checks,omitempty"`
	// FailedStep and Error say why the latest build failed.
	FailedStep string `json:"failed_step,omitempty"`
	Error      string `json:"error,omitempty"`
	// LogTail is the end of the latest build's log.
	LogTail []string  `json:"log_tail,omitempty"`
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
}

// Usable reports whether calls may use the record's image.
func (r Record) Usable() bool { return r.Image != "" && r.Status != StatusFailed }

// Record kinds in the state store: one server-wide record per environment
// and one event log per build.
const (
	recordKind = "environment"
	eventsKind = "environment-events"
)

// Event logs are bounded and expire.
const (
	eventsMaxLen = 5000
	eventsTTL    = 7 * 24 * time.Hour
)

// Registry keeps environment records and build event logs in the state
// store (server-wide: the owner is ""), so every replica and worker sees
// the same environments.
type Registry struct {
	store state.Store
}

// NewRegistry returns a registry on store.
func NewRegistry(store state.Store) *Registry { return &Registry{store: store} }

func recordKey(name string) state.Key { return state.Key{Kind: recordKind, ID: name} }

func eventsKey(name, buildID string) state.Key {
	return state.Key{Kind: eventsKind, ID: name + "/" + buildID}
}

// Get returns the record of name and its version; a missing one is an
// error carrying core.ErrNotFound, naming the environment.
func (r *Registry) Get(ctx context.Context, name string) (Record, int64, error) {
	it, err := r.store.Get(ctx, recordKey(name))
	if errors.Is(err, state.ErrNotFound) {
		return Record{}, 0, core.E("environments", core.ErrNotFound, fmt.Errorf("environment %q not found", name))
	}
	if err != nil {
		return Record{}, 0, fmt.Errorf("environments: read %s: %w", name, err)
	}
	var rec Record
	if err := json.Unmarshal(it.Value, &rec); err != nil {
		return Record{}, 0, core.E("environments", core.ErrInternal, fmt.Errorf("decode the record of %s: %w", name, err))
	}
	return rec, it.Version, nil
}

// Put writes rec; ifVersion as in state.PutOptions (-1: must not exist; a
// version: compare and swap, else core.ErrConflict). It returns the new version.
func (r *Registry) Put(ctx context.Context, rec Record, ifVersion int64) (int64, error) {
	b, err := json.Marshal(rec)
	if err != nil {
		return 0, fmt.Errorf("environments: encode %s: %w", rec.Name, err)
	}
	v, err := r.store.Put(ctx, recordKey(rec.Name), b, state.PutOptions{IfVersion: ifVersion})
	if err != nil {
		return 0, fmt.Errorf("environments: write %s: %w", rec.Name, err)
	}
	return v, nil
}

// Delete removes the record of name (a missing one is not an error).
func (r *Registry) Delete(ctx context.Context, name string) error {
	if err := r.store.Delete(ctx, recordKey(name), 0); err != nil {
		return fmt.Errorf("environments: delete %s: %w", name, err)
	}
	return nil
}

// List returns every record, ordered by name.
func (r *Registry) List(ctx context.Context) ([]Record, error) {
	var out []Record
	after := ""
	for {
		items, err := r.store.List(ctx, recordKind, "", after, 100)
		if err != nil {
			return nil, fmt.Errorf("environments: list: %w", err)
		}
		for _, it := range items {
			var rec Record
			if err := json.Unmarshal(it.Value, &rec); err != nil {
				return nil, core.E("environments", core.ErrInternal, fmt.Errorf("decode the record of %s: %w", it.Key.ID, err))
			}
			out = append(out, rec)
		}
		if len(items) < 100 {
			return out, nil
		}
		after = items[len(items)-1].Key.ID
	}
}

// AppendEvent adds ev to the event log of a build.
func (r *Registry) AppendEvent(ctx context.Context, name, buildID string, ev Event) error {
	b, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("environments: encode an event: %w", err)
	}
	if _, err := r.store.Append(ctx, eventsKey(name, buildID), b, eventsMaxLen, eventsTTL); err != nil {
		return fmt.Errorf("environments: append an event of %s: %w", name, err)
	}
	return nil
}

// Events returns up to limit events of a build after seq (oldest first,
// with their seqs), waiting up to wait for the next one when there are none.
func (r *Registry) Events(ctx context.Context, name, buildID string, after int64, limit int, wait time.Duration) ([]Event, []int64, error) {
	entries, err := r.store.Range(ctx, eventsKey(name, buildID), after, limit, wait)
	if err != nil {
		return nil, nil, fmt.Errorf("environments: read the events of %s: %w", name, err)
	}
	evs := make([]Event, 0, len(entries))
	seqs := make([]int64, 0, len(entries))
	for _, e := range entries {
		var ev Event
		if err := json.Unmarshal(e.Data, &ev); err != nil {
			return nil, nil, core.E("environments", core.ErrInternal, fmt.Errorf("decode an event of %s: %w", name, err))
		}
		evs = append(evs, ev)
		seqs = append(seqs, e.Seq)
	}
	return evs, seqs, nil
}
