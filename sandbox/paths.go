package sandbox

import (
	"fmt"
	"path"
	"strings"

	"github.com/airlock-dev/airlock/core"
)

// checkWorkPath validates a path for a session file operation: relative to
// /work (or under /work/), no "..", no NUL, not empty.
func checkWorkPath(p string) error {
	rel := strings.TrimPrefix(p, "/work/")
	switch {
	case p == "" || rel == "":
		return fmt.Errorf("sandbox: path is empty: %w", core.ErrInvalid)
	case strings.ContainsRune(p, 0):
		return fmt.Errorf("sandbox: path %q contains a NUL byte: %w", p, core.ErrInvalid)
	case strings.HasPrefix(rel, "/"):
		return fmt.Errorf("sandbox: path %q is outside /work: %w", p, core.ErrInvalid)
	case len(p) > 1024:
		return fmt.Errorf("sandbox: path is %d bytes, over 1024: %w", len(p), core.ErrInvalid)
	}
	for _, part := range strings.Split(rel, "/") {
		if part == ".." {
			return fmt.Errorf("sandbox: path %q contains '..': %w", p, core.ErrInvalid)
		}
	}
	if path.Clean(rel) == "." {
		return fmt.Errorf("sandbox: path %q names the work folder itself: %w", p, core.ErrInvalid)
	}
	return nil
}
