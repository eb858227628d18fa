// Package sandbox runs untrusted code in hardened Docker containers: it
// creates each container with hard limits (memory, CPU, pids, ulimits, no
// network, read-only root, dropped capabilities, non-root user), talks to
// the image's in-container controller (images/python/PROTOCOL.md) over the
// attached stdin/stdout in JSON frames, and turns the controller's answer
// into a core.Result: head and tail of each output stream, structured
// errors, displays, re-validated artifacts. Live output goes to the
// core.Sink carried by the call's context.
//
// One-shot calls run in per-owner warm containers: generic ones are kept
// per image (demand-driven, within PoolMax and WarmMemoryBudget, which
// also holds room for the containers out on calls: a container coming back
// over the budget pushes out a generic one above PoolSize first); an
// owner's call takes one of its own idle containers, else a generic one,
// which is the owner's from then on and never serves anyone else. The
// controller forks a fresh interpreter per call (a one-shot shell call is
// a bash it spawns itself, no interpreter) and cleans processes and
// files after it (docs/isolation.md). An owner's batch-lane calls
// (core.LaneBatch) have idle containers of their own: they run at
// Config.BatchCPUShares (cgroup cpu.shares, default 2 against the usual
// 1024; set at creation, or by one ContainerUpdate on a generic container
// taken for the batch), so a batch that fills the cores yields them to
// interactive calls at once, and a batch container never serves the
// owner's interactive calls (nor an interactive one the batch), so those
// never wait for, or run throttled in, a batch container. Sessions hold one container each.
// Containers die with the process that attached them (StdinOnce) and
// remove themselves (AutoRemove); the reaper is the second line. Images
// without the controller run code as the container's command instead.
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
// An archive (Request.Archive: tar, tar.gz or zip) is listed on the host
// first (archive.go: every entry, link chains, the bounds, the /workspace
// size) and then unpacked by the controller into the container's own
// /workspace tmpfs before the code runs, so archive calls use the owner's
// warm containers; the controller empties /workspace after every one-shot
// call. Shell archive calls run as lang shell in the python image's
// controller when the shell image has none. Result.CPUSeconds is the
// controller's count of the call's CPU (the container's cgroup delta less
// the controller's and zygote's own).
//
// It knows nothing of tools, HTTP or Redis; it talks to Docker only through
// the narrow DockerAPI interface so that its logic can be tested with a fake.
package sandbox
