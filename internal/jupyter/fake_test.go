package jupyter

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/core"
)

// fakeBackend is a Backend whose cells are scripted: run returns the
// result of a cell and may emit events through the sink first.
type fakeBackend struct {
	mu          sync.Mutex
	sessions    map[string]string // id -> owner
	n           int
	run         func(ctx context.Context, cell Cell, emit core.Sink) (core.Result, error)
	inputs      []string
	introQ      []core.Introspect
	closed      []string
	interrupted int
}

func newFake() *fakeBackend { return &fakeBackend{sessions: map[string]string{}} }

func (f *fakeBackend) Specs(string) []Spec {
	return []Spec{{Name: "python", DisplayName: "Python 3 (Airlock)", Language: "python"}}
}

func (f *fakeBackend) Open(_ context.Context, owner string, _ Spec) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	id := "s-" + strings.Repeat("0", 23) + string(rune('0'+f.n))
	f.sessions[id] = owner
	return id, nil
}

func (f *fakeBackend) owned(owner, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.sessions[id] != owner {
		return core.Errorf("fake", core.ErrNotFound, "kernel not found")
	}
	return nil
}

func (f *fakeBackend) Close(_ context.Context, owner, id string) error {
	if err := f.owned(owner, id); err != nil {
		return err
	}
	f.mu.Lock()
	delete(f.sessions, id)
	f.closed = append(f.closed, id)
	f.mu.Unlock()
	return nil
}

func (f *fakeBackend) Sessions(_ context.Context, owner string) ([]Session, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Session
	for id, o := range f.sessions {
		if o == owner {
			out = append(out, Session{ID: id, LastUsed: time.Now(), State: "idle"})
		}
	}
	return out, nil
}

func (f *fakeBackend) Session(_ context.Context, owner, id string) (Session, error) {
	if err := f.owned(owner, id); err != nil {
		return Session{}, err
	}
	return Session{ID: id, LastUsed: time.Now(), State: "idle"}, nil
}

func (f *fakeBackend) Execute(ctx context.Context, owner, id string, cell Cell) (core.Result, error) {
	if err := f.owned(owner, id); err != nil {
		return core.Result{}, err
	}
	return f.run(ctx, cell, func(ev core.Event) { core.Emit(ctx, ev) })
}

func (f *fakeBackend) Interrupt(_ context.Context, owner, id string) error {
	f.mu.Lock()
	f.interrupted++
	f.mu.Unlock()
	return f.owned(owner, id)
}

func (f *fakeBackend) Restart(_ context.Context, owner, id string) error { return f.owned(owner, id) }

func (f *fakeBackend) Introspect(_ context.Context, owner, id, code string, q core.Introspect) (json.RawMessage, error) {
	if err := f.owned(owner, id); err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.introQ = append(f.introQ, q)
	f.mu.Unlock()
	return json.RawMessage(`{"status":"ok","matches":["pandas"],"cursor_start":7,"cursor_end":10,"metadata":{}}`), nil
}

func (f *fakeBackend) Input(_ context.Context, owner, id, value string) error {
	f.mu.Lock()
	f.inputs = append(f.inputs, value)
	f.mu.Unlock()
	return f.owned(owner, id)
}

// writeError maps the codes the tests use, standing in for the API's.
func writeError(w http.ResponseWriter, _ *http.Request, err error) {
	status := http.StatusInternalServerError
	switch core.CodeOf(err) {
	case core.ErrNotFound:
		status = http.StatusNotFound
	case core.ErrInvalid:
		status = http.StatusBadRequest
	}
	http.Error(w, err.Error(), status)
}
