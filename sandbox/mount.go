package sandbox

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/airlock-dev/airlock/core"
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
	// Messages name "the input folder", never its host path: a client names
	// inputs by name, and the path would tell it about the host's layout.
	refuse := func(why string) (string, error) {
		return "", core.Errorf("", core.ErrInvalid, "the input folder "+why)
	}
	if !filepath.IsAbs(p) {
		return refuse("is not an absolute path")
	}
	real, err := filepath.EvalSymlinks(filepath.Clean(p))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return refuse("does not exist")
		}
		return refuse("cannot be resolved: " + errnoText(err))
	}
	st, err := os.Stat(real)
	if err != nil {
		return refuse("cannot be examined: " + errnoText(err))
	}
	if !st.IsDir() {
		return refuse("is not a directory")
	}
	if real == "/" {
		return refuse("is the host root, which cannot be mounted")
	}
	for _, sys := range []string{"/proc", "/sys", "/dev", "/run", "/var/run"} {
		if rel, err := filepath.Rel(sys, real); err == nil && filepath.IsLocal(rel) || real == sys {
			return refuse("is a system folder, which cannot be mounted")
		}
	}
	for _, s := range []string{"/var/run/docker.sock", "/run/docker.sock"} {
		if rel, err := filepath.Rel(real, s); err == nil && filepath.IsLocal(rel) {
			return refuse("contains the Docker socket, so it cannot be mounted")
		}
	}
	return real, nil
}
