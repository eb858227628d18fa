package state

import (
	"os"
	"path/filepath"
)

// DefaultDataDir is the directory embedded mode keeps its state in:
// $AIRLOCK_DATA_DIR when set, else $XDG_STATE_HOME/airlock, else
// ~/.local/state/airlock (the XDG default). Without a home directory it
// falls back to a folder under the system temporary directory.
func DefaultDataDir() string {
	if d := os.Getenv("AIRLOCK_DATA_DIR"); d != "" {
		return d
	}
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "airlock")
	}
	if h, err := os.UserHomeDir(); err == nil && h != "" {
		return filepath.Join(h, ".local", "state", "airlock")
	}
	return filepath.Join(os.TempDir(), "airlock-state")
}
