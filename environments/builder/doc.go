// Package builder makes environments' images in a Docker daemon: it
// builds a spec (environments.Source) into airlock/env-NAME:HASH, checks
// the image, records it in the environments.Registry, and lists and
// removes environments with their images.
//
// HASH is the content hash (Hash, 16 hex digits) of the spec's canonical
// form, the base image's ID, the effective package index, the bytes of
// every wheel and file, and the build recipe: an unchanged spec is never
// rebuilt (a no-op: the tag exists) and a changed one never serves stale
// code. Egress is not part of it (it changes nothing in the image).
//
// A build (Manager.Build) runs the recipe (script.go) in one container
// from the base image pinned by ID, as root in the build only:
// capabilities limited to what apt needs (CHOWN, DAC_OVERRIDE, FOWNER,
// SETUID, SETGID), no-new-privileges, no mounts (the context is copied
// in), no Docker socket, bounded memory, CPU and pids, and the default
// bridge network only when apt or a package index is used: to reach the
// Debian mirror the base image was bootstrapped from (or Config.Mirror,
// $AIRLOCK_DEBIAN_MIRROR) and the operator's index; wheels come in with
// the context and pip runs with --no-index unless an index is given, so
// it never reaches PyPI by default. pip comes from apt for the build only
// (python3-pip is purged afterwards unless the spec lists it; its
// dependencies stay, packages may need them) and installs as root into
// /usr/local/lib/python3.*/dist-packages, Debian's path for local
// packages and on the sandbox Python's sys.path (--break-system-packages
// answers Debian's PEP 668 marker). The recipe ends like images/build.sh's
// final one: everything readable, setuid/setgid bits stripped, the
// context removed. The container is committed while it waits, with the
// sandbox user, /work, /bin/bash, the base's env plus the spec's, and the
// labels (the base's airlock.runner when it has the controller,
// airlock.image=env-NAME, airlock.environment, airlock.environment.hash,
// airlock.environment.base, airlock.environment.packages); then its stdin
// closes and it removes itself. It carries no labels of its own (a commit
// would copy them into the image); it dies with the builder's attach.
//
// The untagged image is then checked, and only a checked image is tagged:
// the image user is the sandbox user with no entrypoint and /bin/bash as
// its command; no setuid or setgid file (the image's find run as root
// with no capability but DAC_READ_SEARCH, no network, read-only root);
// through a sandbox engine with a real call's settings (SandboxRunners)
// the controller is pid 1 and answers, no process runs as root, every
// check_imports module imports and every check_commands command exits 0;
// the size is reported. A failed build removes its container and image,
// records the failure and returns an environments.BuildError naming the
// step and the package, requirement or check that failed. Events (step,
// log, progress, then done or failed) go to the caller and to the build's
// event log.
//
// It talks to Docker only through the narrow DockerAPI interface.
package builder
