// Package sandbox runs untrusted code in hardened Docker containers: it
// creates each container with hard limits (memory, CPU, pids, ulimits, no
// network, read-only root, dropped capabilities, non-root user), talks to
// the image's in-container controller (images/python/PROTOCOL.md) over its
// link in JSON lines (link.go: a unix socket of the container's own,
// bind-mounted at LinkPath, whose one connection the controller makes
// first thing; dockerd is not on the path), and turns the controller's answer
// into a core.Result: head and tail of each output stream, structured
// errors, displays, re-validated artifacts. Live output goes to the
// core.Sink carried by the call's context.
//
// Every image carries the same controller (label airlock.runner; the
// python and shell images get it from images/build.sh, and environments
// built from them inherit it), and every container runs it as pid 1: an
// image without it is refused (ErrNoController), never run with the code
// as its command. So every container, one-shot or session, python or
// shell, has the same dead man's switch: when the Airlock process that
// holds its link goes away (even kill -9) the kernel closes the socket,
// the controller reads EOF, kills everything and exits, and the
// container removes itself (AutoRemove); and the same deadline inside the
// container: the controller stops a call at its timeout and exits at the
// container's maximum life whether or not Airlock is there. The reaper is
// the second line. The python image's zygote preloads numpy & co
// (AIRLOCK_PRELOAD=1 in its env; cold one-shot containers turn it off, so
// a cold call starts sooner, and such a bare container serves its owner
// again only until a generic, preloaded one is free); the shell image has
// python3 for the controller and nothing to preload.
//
// One-shot calls run in per-owner warm containers: generic ones are kept
// per image (demand-driven, within PoolMax and WarmMemoryBudget, which
// also holds room for the containers out on calls: a container coming back
// over the budget pushes out a generic one above PoolSize first, and takes
// its room once it is gone). The budget counts the idle, booting and
// being-removed warm containers of every pool, taken and given back under
// one lock (budget.go), so it is never passed, not even for a moment; the
// pool's expiry runs on its own timer, so an owner's idle container ends at
// OwnerIdle even while the pool boots. An owner's call takes one of its
// own idle containers, else a generic one, which is the owner's from then
// on and never serves anyone else. The controller forks a fresh
// interpreter per call (a one-shot shell call is a bash it spawns itself,
// no interpreter) and cleans processes and files after it
// (docs/isolation.md). An owner's batch-lane calls
// (core.LaneBatch) have idle containers of their own: they run at
// Config.BatchCPUShares (cgroup cpu.shares, default 2 against the usual
// 1024; set at creation, or by one ContainerUpdate on a generic container
// taken for the batch), so a batch that fills the cores yields them to
// interactive calls at once, and a batch container never serves the
// owner's interactive calls (nor an interactive one the batch), so those
// never wait for, or run throttled in, a batch container. Sessions hold one container each.
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
// No host path is ever mounted into a sandbox. An input folder
// (Request.Mount) is copied in (inputs.go): scanned on the host before any
// container starts (folders, regular files and links that stay inside it;
// links leading out, whose target could name a host path, and special
// files are left out, with a warning naming them relative to the folder;
// folders on another filesystem come empty), packed into a tar by the
// server when the call runs, streamed to the controller in chunks
// (input_stream.go: neither side holds the whole tar) and unpacked into the
// container's own /workspace tmpfs, read-only, as an archive is. The mount
// tables then show /workspace as a tmpfs ("/" its root, no source path),
// and the sandbox runs as its range uid whoever owns the folder. A folder
// over Config.InputMaxEntries entries, a tar over Config.InputMaxBytes
// (defaults 20,000 and 256 MiB; --input-max-entries, --input-max-bytes),
// files over the call's tmpfs_bytes or more than its memory_bytes can hold
// is refused before any container starts, naming the bound; an
// entry the server cannot read is refused naming it. No refusal quotes the
// folder's host path. Input calls use the owner's warm containers; a
// session gets its input with its first exec and keeps it.
//
// An archive (Request.Archive: tar, tar.gz or zip) is listed on the host
// first (archive.go: every entry, link chains, the bounds, the /workspace
// size) and then unpacked by the controller into the container's own
// /workspace tmpfs before the code runs, so archive calls use the owner's
// warm containers; the controller empties /workspace after every one-shot
// call. Result.CPUSeconds is the controller's count of the call's CPU (the
// container's cgroup delta less the controller's and zygote's own).
//
// It knows nothing of tools, HTTP or Redis; it talks to Docker only through
// the narrow DockerAPI interface so that its logic can be tested with a fake.
package sandbox
