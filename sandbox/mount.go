package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
)

// WorkspacePath is where a request's host folder appears, read-only.
const WorkspacePath = "/workspace"

// resolveMount validates a host folder for a read-only bind mount: absolute,
// existing, a directory, and fully resolved so the daemon mounts exactly the
// folder that was checked. Symlinks inside the folder cannot escape it: a
// bind mount exposes the folder's own tree, and a link's target is resolved
// inside the container, where the host's other files do not exist.
func resolveMount(p string) (string, error) {
	if p == "" {
		return "", nil
	}
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("mount %q: path must be absolute", p)
	}
	real, err := filepath.EvalSymlinks(filepath.Clean(p))
	if err != nil {
		return "", fmt.Errorf("mount %q: %w", p, err)
	}
	st, err := os.Stat(real)
	if err != nil {
		return "", fmt.Errorf("mount %q: %w", p, err)
	}
	if !st.IsDir() {
		return "", fmt.Errorf("mount %q: not a directory", p)
	}
	if real == "/" {
		return "", fmt.Errorf("mount %q: the host root cannot be mounted", p)
	}
	for _, sys := range []string{"/proc", "/sys", "/dev", "/run", "/var/run"} {
		if rel, err := filepath.Rel(sys, real); err == nil && filepath.IsLocal(rel) || real == sys {
			return "", fmt.Errorf("mount %q: system folder %s cannot be mounted", p, sys)
		}
	}
	for _, s := range []string{"/var/run/docker.sock", "/run/docker.sock"} {
		if rel, err := filepath.Rel(real, s); err == nil && filepath.IsLocal(rel) {
			return "", fmt.Errorf("mount %q: contains the Docker socket", p)
		}
	}
	return real, nil
}
