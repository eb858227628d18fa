package sessions

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/internal/sessionrecords"
	"github.com/airlock-dev/airlock/keys"
	"github.com/airlock-dev/airlock/state"
)

// fakeBackend is a sandbox whose sessions live in a map; gone sessions
// answer not found, and a folder tree is served to ListFiles.
type fakeBackend struct {
	mu     sync.Mutex
	n      int
	open   map[string]bool
	closed []string
	tree   map[string][]core.FileEntry
}

func (f *fakeBackend) Open(_ context.Context, owner string, _ core.Limits, _ bool) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	id := fmt.Sprintf("s%d", f.n)
	f.open[id] = true
	return id, nil
}

func (f *fakeBackend) Close(_ context.Context, _, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = append(f.closed, id)
	if !f.open[id] {
		return core.ErrSessionNotFound
	}
	delete(f.open, id)
	return nil
}

func (f *fakeBackend) live(id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.open[id] {
		return core.ErrSessionNotFound
	}
	return nil
}

func (f *fakeBackend) PutFile(_ context.Context, _, id, _ string, body io.Reader) (int64, error) {
	if err := f.live(id); err != nil {
		return 0, err
	}
	return io.Copy(io.Discard, body)
}

func (f *fakeBackend) GetFile(_ context.Context, _, id, _ string, open func(int64) io.Writer) (int64, error) {
	if err := f.live(id); err != nil {
		return 0, err
	}
	n, err := open(2).Write([]byte("ok"))
	return int64(n), err
}

func (f *fakeBackend) ListFiles(_ context.Context, _, id, path string) ([]core.FileEntry, error) {
	if err := f.live(id); err != nil {
		return nil, err
	}
	entries, ok := f.tree[path]
	if !ok {
		return nil, core.Errorf("fake", core.ErrInvalid, "not a folder")
	}
	return entries, nil
}

func (f *fakeBackend) InterruptSession(_ context.Context, _, id string) (bool, error) {
	return false, f.live(id)
}

func (f *fakeBackend) RestartSession(_ context.Context, _, id string) error { return f.live(id) }

func (f *fakeBackend) SessionInfo(_ context.Context, _, id string) (core.SessionInfo, error) {
	if err := f.live(id); err != nil {
		return core.SessionInfo{}, err
	}
	return core.SessionInfo{ID: id, State: "idle", ExecCount: 3, CPUMS: 1.5, MemBytes: 1 << 20}, nil
}

// downStore refuses every write, as a store that cannot be reached.
type downStore struct{ state.Store }

func (downStore) Put(context.Context, state.Key, []byte, state.PutOptions) (int64, error) {
	return 0, state.ErrUnavailable
}

func newService(t *testing.T, st state.Store) (*Service, *fakeBackend) {
	t.Helper()
	be := &fakeBackend{open: map[string]bool{}, tree: map[string][]core.FileEntry{
		"":         {{Name: "data.csv", Type: "file", Size: 4}, {Name: ".hidden", Type: "file"}, {Name: "out", Type: "dir"}},
		"out":      {{Name: "deep", Type: "dir"}, {Name: "plot.png", Type: "file", Size: 3}},
		"out/deep": {{Name: "x.txt", Type: "file", Size: 1}},
	}}
	return New(be, sessionrecords.New(st, time.Hour, 0, nil), nil, nil), be
}

// TestOpenViewClose: a session opens within its owner's budgets and is
// recorded; its view joins the record and the sandbox's live state; when
// the sandbox no longer has it, its record goes at once and every
// operation answers not_found; a session that could not be recorded is
// closed again in the sandbox.
func TestOpenViewClose(t *testing.T) {
	ctx := context.Background()
	svc, be := newService(t, state.NewMemory(nil))
	budget := keys.Budget{Sessions: 1}
	s1, err := svc.Open(ctx, "alice", core.Limits{}, false, budget, core.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Open(ctx, "alice", core.Limits{}, false, budget, core.Limits{}); !errors.Is(err, core.ErrQuota) {
		t.Fatalf("past the budget: %v", err)
	}
	rec, _ := svc.records.Get(ctx, "alice", s1.ID, false)
	v, err := svc.View(ctx, rec)
	if err != nil || v.State != "idle" || *v.ExecutionCount != 3 || v.CreatedAt.IsZero() {
		t.Fatalf("view: %+v %v", v, err)
	}
	if l := svc.List(ctx, "alice"); len(l) != 1 || l[0].ID != s1.ID {
		t.Fatalf("list: %+v", l)
	}
	be.mu.Lock()
	delete(be.open, s1.ID) // the sandbox lost it
	be.mu.Unlock()
	if _, err := svc.Interrupt(ctx, rec); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("interrupt of a gone session: %v", err)
	}
	if _, ok := svc.records.Get(ctx, "alice", s1.ID, false); ok || len(svc.List(ctx, "alice")) != 0 {
		t.Fatal("a gone session kept its record")
	}

	down, be2 := newService(t, downStore{state.NewMemory(nil)})
	if _, err := down.Open(ctx, "alice", core.Limits{}, false, keys.Budget{}, core.Limits{}); !errors.Is(err, state.ErrUnavailable) {
		t.Fatalf("open with the store down: %v", err)
	}
	if len(be2.closed) != 1 || len(be2.open) != 0 {
		t.Fatalf("the unrecorded session was not closed: %v", be2.closed)
	}
}

// TestListFilesWalk: the walk lists folders and files breadth first,
// leaves hidden entries out, stops at its bounds, refuses bad roots, and
// says which segment of a root that cannot be listed is missing.
func TestListFilesWalk(t *testing.T) {
	ctx := context.Background()
	svc, _ := newService(t, state.NewMemory(nil))
	s, err := svc.Open(ctx, "alice", core.Limits{}, false, keys.Budget{}, core.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	rec, _ := svc.records.Get(ctx, "alice", s.ID, false)
	list, err := svc.ListFiles(ctx, rec, "")
	var paths []string
	for _, f := range list.Files {
		paths = append(paths, f.Path)
	}
	if err != nil || strings.Join(paths, " ") != "data.csv out out/deep out/plot.png out/deep/x.txt" || list.Truncated {
		t.Fatalf("walk: %v %v", paths, err)
	}
	if _, err := svc.ListFiles(ctx, rec, "../etc"); !errors.Is(err, core.ErrInvalid) {
		t.Fatalf("a root with ..: %v", err)
	}
	if _, err := svc.ListFiles(ctx, rec, "out/nope"); !errors.Is(err, core.ErrNotFound) || !strings.Contains(err.Error(), `"out/nope" does not exist`) {
		t.Fatalf("a missing folder: %v", err)
	}
	if _, err := svc.ListFiles(ctx, rec, "data.csv"); !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), "is a file") {
		t.Fatalf("a file as the root: %v", err)
	}
}
