package api

import (
	"context"

	"github.com/airlock-dev/airlock/core"
)

// InterruptSession reports a call running when the session is marked busy.
func (f *fakeSessions) InterruptSession(ctx context.Context, owner, id string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.check(owner, id); err != nil {
		return false, err
	}
	if f.busy[id] {
		f.interrupts++
		return true, nil
	}
	return false, nil
}

// RestartSession counts restarts; files stay.
func (f *fakeSessions) RestartSession(ctx context.Context, owner, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.check(owner, id); err != nil {
		return err
	}
	f.restarts[id]++
	return nil
}

// SessionInfo answers a fixed resource use and the busy mark.
func (f *fakeSessions) SessionInfo(ctx context.Context, owner, id string) (core.SessionInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.check(owner, id); err != nil {
		return core.SessionInfo{}, err
	}
	state := "idle"
	if f.busy[id] {
		state = "busy"
	}
	return core.SessionInfo{ID: id, Owner: owner, State: state, ExecCount: 3 + f.restarts[id], CPUMS: 12.5, MemBytes: 1 << 20}, nil
}

// setBusy marks id as running a call.
func (f *fakeSessions) setBusy(id string, busy bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.busy[id] = busy
}

// forget drops id as if the sandbox had lost it.
func (f *fakeSessions) forget(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.open, id)
}
