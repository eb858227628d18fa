// Package sandbox runs one piece of untrusted code in one throwaway Docker
// container: it creates the container with hard limits (memory, CPU, pids,
// ulimits, no network, read-only root, dropped capabilities, non-root user),
// runs the code, collects bounded output and artifacts, and destroys the
// container whatever happened. It also keeps a warm pool of started
// containers and stateful sessions bound to one container each.
//
// Tenants on one host are kept apart below the container too: every
// container runs as its own uid from Config.UIDRange (default 70000–79999,
// outside the host's regular and subordinate id ranges), so per-uid kernel
// limits such as inotify instances, nproc and keyrings are never shared; a
// uid is reused only after its container is removed. Workers sharing one
// host should get disjoint ranges. Processes run without a passwd entry
// (HOME=/tmp). Sandboxes get OomScoreAdj 500, so host memory pressure kills
// them before the server, and a private /dev/shm of at most 16 MiB (or the
// tmpfs size when smaller).
//
// An input folder (Request.Mount) is checked before any container starts:
// if "others" can read its first 10,000 entries the container uses its range
// uid; if not and the folder belongs to a non-root user who can read them,
// the container (always a cold one) runs as that owner; otherwise the call
// is refused, naming the first unreadable path relative to the folder and
// what to change. No refusal quotes the folder's host path. One trace
// remains: /proc/self/mountinfo shows the bind source's path within its
// filesystem as the /workspace line's root field (a Docker local volume
// with o=bind shows the same). Hiding it needs a mount with its own
// superblock, e.g. a read-only overlay whose lowerdir is given relative to
// a neutral working directory, which the daemon's host must allow.
//
// It knows nothing of tools, HTTP or Redis; it talks to Docker only through
// the narrow DockerAPI interface so that its logic can be tested with a fake.
package sandbox
