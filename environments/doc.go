// Package environments turns a declarative spec into a named, built and
// checked sandbox image: an environment (issue 28). The built-in
// environments are python and shell (the images `make images` builds); a
// custom one is built FROM one of them, so it keeps the controller, the
// sandbox user and every hardening property.
//
// The spec (Spec, Parse) is a small YAML file, or the same document as
// JSON: name, base, apt, pip, wheels, index_url, files, env,
// check_imports, check_commands and egress, nothing else. Unknown fields
// are refused naming them (user, entrypoint, cap_add, mounts, ... say
// why), and every bad value is refused naming its field. Files may land
// only under FileRoots (/opt, /srv, /usr/local/share; never /opt/airlock),
// so no file replaces a system binary, library or configuration; env may
// not set what the sandbox owns (AIRLOCK_*, PATH, HOME, PYTHON*, LD_*, the
// shell's startup and parsing variables) nor anything secret-looking.
// Egress is stored and validated here and enforced by the network layer.
//
// The image tag is airlock/env-NAME:HASH, HASH the content hash (Hash) of
// the spec's canonical form, the base image's ID, the effective package
// index, the bytes of every wheel and file, and the build recipe: an
// unchanged spec is never rebuilt (a no-op) and a changed one never
// serves stale code.
//
// A build (Manager.Build) runs the recipe (script.go) in one container
// from the base image pinned by ID, as root in the build only: capabilities
// limited to what apt needs, no-new-privileges, no mounts (the context is
// copied in), no Docker socket, bounded memory, CPU and pids, and the
// default bridge network only when apt or a package index is used, to
// reach the Debian mirror the base image was bootstrapped from (or
// Config.Mirror, $AIRLOCK_DEBIAN_MIRROR) and the operator's wheelhouse or
// index; pip never reaches PyPI by default. pip comes from apt for the
// build only and installs as root into /usr/local/lib/python3.*/dist-packages
// (Debian's path for local packages, on the sandbox Python's sys.path;
// --break-system-packages answers Debian's PEP 668 marker), and python3-pip
// is purged afterwards unless the spec lists it. The recipe ends like
// images/build.sh's final one (everything readable, setuid/setgid bits
// stripped), the running container is committed with the sandbox user,
// /work, the env and the airlock labels (airlock.runner when the base has
// the controller, airlock.environment, airlock.environment.hash), and the
// untagged image is checked: the image user is the sandbox user with no
// entrypoint; no setuid or setgid file (find as root with only
// DAC_READ_SEARCH); through a sandbox engine with a real call's settings
// (SandboxRunners), the controller is pid 1 and answers, no process runs
// as root, every check_imports module imports and every check_commands
// command exits 0; the size is reported. Only a checked image is tagged.
// A failed build removes its container and image and returns a BuildError
// naming the step and the package, requirement or check that failed. The
// build streams step, log and progress events, then done or failed.
//
// The Registry keeps one record per environment in the state store
// (spec, hash, image, status, packages, size, build time, checks, log
// tail) and one event log per build, so every replica sees them.
package environments
