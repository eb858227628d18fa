package sandbox

import (
	"errors"
	"testing"
	"time"

	"github.com/docker/docker/errdefs"
)

// TestRemoveWaitsOutRemovalInProgress: while dockerd's own removal of a
// container is in progress (a conflict), removeNow keeps at it until the
// container is gone, past the attempts it gives any other error; an error
// that is not a conflict is tried removeAttempts times; and a removal
// still in progress at the deadline is given up.
func TestRemoveWaitsOutRemovalInProgress(t *testing.T) {
	const conflicts = 3 * removeAttempts
	left := conflicts
	f := &fakeDocker{remove: func(string) error {
		if left > 0 {
			left--
			return errdefs.Conflict(errors.New("removal of container c1 is already in progress"))
		}
		return errdefs.NotFound(errors.New("no such container: c1"))
	}}
	e := New(DefaultConfig(), f, nil)
	e.removeUntil("c1", time.Now().Add(time.Minute), time.Microsecond)
	if n := f.called("remove"); n != conflicts+1 {
		t.Errorf("%d removal tries, want %d (every conflict waited out, then gone)", n, conflicts+1)
	}

	down := &fakeDocker{remove: func(string) error { return errors.New("daemon unreachable") }}
	e = New(DefaultConfig(), down, nil)
	e.removeUntil("c2", time.Now().Add(time.Minute), time.Microsecond)
	if n := down.called("remove"); n != removeAttempts {
		t.Errorf("%d removal tries with the daemon unreachable, want %d", n, removeAttempts)
	}

	stuck := &fakeDocker{remove: func(string) error {
		return errdefs.Conflict(errors.New("removal of container c3 is already in progress"))
	}}
	e = New(DefaultConfig(), stuck, nil)
	start := time.Now()
	e.removeUntil("c3", start.Add(50*time.Millisecond), time.Millisecond)
	if took := time.Since(start); took < 50*time.Millisecond {
		t.Errorf("gave up a removal in progress after %v, before its deadline", took)
	}
}
