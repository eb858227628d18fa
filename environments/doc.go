// Package environments is what Airlock knows of environments (issue 28)
// without Docker: the spec, its validation, the build's inputs, the
// records and event logs in the state store, and the events and errors of
// a build. The images themselves are made, checked and removed by
// environments/builder, on a host with a Docker daemon.
//
// An environment is a named, built and checked sandbox image. The
// built-in environments are python and shell (the images `make images`
// builds); a custom one is built FROM one of them, so it keeps the
// controller, the sandbox user and every hardening property.
//
// The spec (Spec, Parse) is a small YAML file, or the same document as
// JSON: name, base, apt, pip, wheels, index_url, files, env,
// check_imports, check_commands and egress, nothing else. Unknown fields
// are refused naming them (user, entrypoint, cap_add, mounts, ... also say
// why), and every bad value is refused naming its field. pip requirements
// are names, extras and versions only (no URLs, markers or pip options).
// Files may land only under FileRoots (/opt, /srv, /usr/local/share;
// never /opt/airlock), so no file replaces a system binary, library,
// loader path or configuration (/etc/passwd, /usr/bin/*, /usr/local/bin/*,
// dist-packages), and sources must be relative to the spec's folder; a
// source with the setuid or setgid bit, a link or a device is refused.
// env may not set what the sandbox owns (AIRLOCK_*, PATH, HOME, PYTHON*,
// LD_*, LANG, the shells' startup and parsing variables) nor anything
// secret-looking. Egress is stored and validated here and enforced by the
// network layer.
//
// Load reads a spec file and the wheels and files it names into a Source
// (their bytes, read once, so the content hash and the image come from
// the same bytes); NewSource does the same for bytes that come over the
// API, which never names paths on the server.
//
// The Registry keeps one record per environment in the state store
// (server-wide, kind "environment": spec, hash, image, status, packages,
// size, build time, checks, log tail) and one event log per build (kind
// "environment-events"), so every replica and worker sees them. A
// record's Image is set only by a build that passed its checks and is
// cleared when a later build of a changed spec fails: a call never runs
// code its current spec no longer describes.
package environments
