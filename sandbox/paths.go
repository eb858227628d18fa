package sandbox

import (
	"fmt"
	"path"
	"strings"
)

// checkWorkPath validates a path for a session file operation: relative to
// /work (or under /work/), no "..", no NUL, not empty.
func checkWorkPath(p string) error {
	rel := strings.TrimPrefix(p, "/work/")
	switch {
	case p == "" || rel == "":
		return fmt.Errorf("sandbox: path is empty: %w", ErrFile)
	case strings.ContainsRune(p, 0):
		return fmt.Errorf("sandbox: path %q contains a NUL byte: %w", p, ErrFile)
	case strings.HasPrefix(rel, "/"):
		return fmt.Errorf("sandbox: path %q is outside /work: %w", p, ErrFile)
	case len(p) > 1024:
		return fmt.Errorf("sandbox: path is %d bytes, over 1024: %w", len(p), ErrFile)
	}
	for _, part := range strings.Split(rel, "/") {
		if part == ".." {
			return fmt.Errorf("sandbox: path %q contains '..': %w", p, ErrFile)
		}
	}
	if path.Clean(rel) == "." {
		return fmt.Errorf("sandbox: path %q names the work folder itself: %w", p, ErrFile)
	}
	return nil
}
