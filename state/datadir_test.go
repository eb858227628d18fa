package state_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/airlock-dev/airlock/state"
)

// TestDefaultDataDir checks the order: $AIRLOCK_DATA_DIR, then
// $XDG_STATE_HOME/airlock, then ~/.local/state/airlock.
func TestDefaultDataDir(t *testing.T) {
	t.Setenv("HOME", "/home/tester")
	t.Setenv("AIRLOCK_DATA_DIR", "/srv/airlock")
	t.Setenv("XDG_STATE_HOME", "/xdg/state")
	if got := state.DefaultDataDir(); got != "/srv/airlock" {
		t.Fatalf("with AIRLOCK_DATA_DIR: %s", got)
	}
	os.Unsetenv("AIRLOCK_DATA_DIR")
	if got := state.DefaultDataDir(); got != filepath.Join("/xdg/state", "airlock") {
		t.Fatalf("with XDG_STATE_HOME: %s", got)
	}
	os.Unsetenv("XDG_STATE_HOME")
	if got := state.DefaultDataDir(); got != "/home/tester/.local/state/airlock" {
		t.Fatalf("default: %s", got)
	}
}
