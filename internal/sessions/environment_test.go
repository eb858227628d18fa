package sessions

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/environments"
	"github.com/airlock-dev/airlock/internal/sessionrecords"
	"github.com/airlock-dev/airlock/internal/snapshots"
	"github.com/airlock-dev/airlock/keys"
	"github.com/airlock-dev/airlock/state"
)

// envBackend is fakeBackend that opens sessions in environments and
// takes snapshots into a real snapshot store the way the worker's keeper
// does (the environment the snapshot request names goes into its meta).
type envBackend struct {
	*fakeBackend
	store *snapshots.Store
	mu    sync.Mutex
	envOf map[string]string // session → environment it was opened in
}

func (b *envBackend) OpenIn(ctx context.Context, owner string, env environments.Target, limits core.Limits, bg bool) (string, error) {
	id, err := b.Open(ctx, owner, limits, bg)
	b.mu.Lock()
	b.envOf[id] = env.Name
	b.mu.Unlock()
	return id, err
}

func (b *envBackend) snapshot(ctx context.Context, owner, snapID, env string, hidden bool) (core.SnapshotReport, error) {
	w, err := b.store.Create(ctx, owner, snapID)
	if err != nil {
		return core.SnapshotReport{}, err
	}
	for _, part := range core.SnapshotParts {
		if err := w.Write(ctx, part, nil); err != nil {
			return core.SnapshotReport{}, err
		}
	}
	if env == "" {
		env = "python"
	}
	if _, err := w.Commit(ctx, snapshots.Meta{Environment: env, Hidden: hidden}); err != nil {
		return core.SnapshotReport{}, err
	}
	return core.SnapshotReport{}, nil
}

func (b *envBackend) SnapshotSession(ctx context.Context, owner, _, snapID string, _ core.Limits, _, hidden bool) (core.SnapshotReport, error) {
	return b.snapshot(ctx, owner, snapID, "", hidden)
}

func (b *envBackend) SnapshotSessionIn(ctx context.Context, owner, _, snapID, env string, _ core.Limits, _, hidden bool) (core.SnapshotReport, error) {
	return b.snapshot(ctx, owner, snapID, env, hidden)
}

func (b *envBackend) RestoreSession(context.Context, string, string, string, string) (core.SnapshotReport, error) {
	return core.SnapshotReport{}, nil
}

// TestSessionEnvironmentShown: GET /v1/sessions/{id} (View) and GET
// /v1/sessions (List) show the environment of a session opened in one, of
// one restored from its snapshot and of its fork, and those two are
// opened in that environment (resolved again for the owner).
func TestSessionEnvironmentShown(t *testing.T) {
	ctx := context.Background()
	st := state.NewMemory(nil)
	fb, _ := newService(t, st)
	be := &envBackend{fakeBackend: fb.backend.(*fakeBackend), store: snapshots.New(st, snapshots.DefaultConfig(), nil), envOf: map[string]string{}}
	svc := New(be, sessionrecords.New(st, time.Hour, 0, nil), nil, nil)
	snaps := NewSnapshots(svc, be, be.store, snapshots.NewCallLog(st))
	var resolved []string
	snaps.SetEnvironments(func(_ context.Context, owner, name string) (environments.Target, error) {
		resolved = append(resolved, owner+"/"+name)
		return environments.Target{Name: name, Base: "python", Image: "airlock/env-" + name + ":0123456789abcdef", Hash: "0123456789abcdef"}, nil
	})
	geo := environments.Target{Name: "geo", Base: "python", Image: "airlock/env-geo:0123456789abcdef", Hash: "0123456789abcdef"}
	budget := keys.Budget{Sessions: 10}
	opened, err := svc.OpenIn(ctx, "alice", geo, core.Limits{}, false, budget, core.Limits{})
	if err != nil || opened.Environment != "geo" {
		t.Fatalf("open in geo: %+v %v", opened, err)
	}
	plain, err := svc.Open(ctx, "alice", core.Limits{}, false, budget, core.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	view := func(id string) string {
		t.Helper()
		rec, ok := svc.records.Get(ctx, "alice", id, false)
		if !ok {
			t.Fatalf("no record of %s", id)
		}
		v, err := svc.View(ctx, rec)
		if err != nil {
			t.Fatal(err)
		}
		return v.Environment
	}
	if got := view(opened.ID); got != "geo" {
		t.Fatalf("GET of a session opened in geo: environment %q", got)
	}
	if got := view(plain.ID); got != "" {
		t.Fatalf("GET of a default session: environment %q", got)
	}

	rec, _ := svc.records.Get(ctx, "alice", opened.ID, false)
	snap, err := snaps.Take(ctx, rec)
	if err != nil {
		t.Fatal(err)
	}
	restored, err := snaps.Open(ctx, "alice", snap.SnapshotID, "", core.Limits{}, false, budget, core.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	forked, err := snaps.Fork(ctx, rec, budget, core.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	for what, id := range map[string]string{"restored": restored.ID, "forked": forked.ID} {
		if got := view(id); got != "geo" {
			t.Fatalf("GET of the %s session: environment %q, want geo", what, got)
		}
		be.mu.Lock()
		env := be.envOf[id]
		be.mu.Unlock()
		if env != "geo" {
			t.Fatalf("the %s session was opened in %q, want geo", what, env)
		}
	}
	if fmt.Sprint(resolved) != "[alice/geo alice/geo]" {
		t.Fatalf("resolved %v, want geo for alice twice (restore, fork)", resolved)
	}
	list := svc.List(ctx, "alice")
	got := map[string]string{}
	for _, s := range list {
		got[s.ID] = s.Environment
	}
	want := map[string]string{opened.ID: "geo", plain.ID: "", restored.ID: "geo", forked.ID: "geo"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("GET /v1/sessions environments %v, want %v", got, want)
	}
}
