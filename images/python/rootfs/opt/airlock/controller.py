"""Airlock's in-container controller: the container's main process, pid 1 (see PROTOCOL.md).

It speaks newline-delimited JSON with Airlock on its link (a unix socket Airlock
listens on, connected to first thing; airlock_link.py), starts the
zygote (which forks kernels), runs every call in a kernel (or a bash of its own) with
fresh per-call pipes, and builds each reply from what it observes itself: output read
from those pipes up to EOF, exit and death of the kernel, the deadline, the output cap,
and artifacts read from /work. User code never runs in this process and cannot reach
its fds (PR_SET_DUMPABLE 0, CLOEXEC, nothing inherited).

This file wires the pieces (PROTOCOL.md "Module layout"): airlock_loop (the event loop),
airlock_link (Airlock's wire), airlock_ops (the request table), airlock_call and
airlock_output (the call lifecycle), airlock_kernelops (questions the session's kernel
answers between calls), airlock_kernels, airlock_session and airlock_shell (kernel
choice), airlock_cleanup (the sweep, IPC, files), airlock_accounting (CPU),
airlock_artifacts, airlock_workspace and airlock_files (files), airlock_proc (/proc),
airlock_snapshots (session snapshots: the namespace with dill in the kernel, /work as a tar).
"""

import ctypes
import json
import os
import signal
import sys

import airlock_cleanup as cleanup
import airlock_egress as egress
import airlock_sched as sched
from airlock_accounting import CpuMeter
from airlock_artifacts import Artifacts
from airlock_call import Runner
from airlock_kernelops import KernelOps
from airlock_kernels import Kernels
from airlock_link import Link, connect
from airlock_loop import Loop, now
from airlock_ops import Ops
from airlock_session import Session
from airlock_shell import OomScore, Shells
from airlock_snapshots import Snapshots
from airlock_workspace import Workspace, load_archive

WORK = os.environ.get("AIRLOCK_WORK", "/work")
# /workspace is the controller's own tmpfs (Airlock mounted no input folder there): a
# call's archive is unpacked into it, and it is emptied after every one-shot call.
WORKSPACE_OWNED = os.environ.get("AIRLOCK_WORKSPACE") == "tmpfs"
CLEAN_DIRS = (WORK, "/tmp", "/dev/shm", "/dev/mqueue")
MADE_DIRS = (os.path.join(WORK, "outputs"), "/tmp/.mpl") + tuple(d for d in [egress.user_site()] if d)
# matplotlib's font cache built into the image (images/build.sh), copied into /tmp/.mpl.
MPL_PREBUILT = "/usr/local/share/airlock/mpl"
PR_SET_DUMPABLE = 4


class Controller:
    """The container's controller: every piece, the main loop and the way out."""

    def __init__(self, oom, link_fd):
        self.work = WORK
        self.loop = Loop(float(os.environ.get("AIRLOCK_MAX_LIFE_S") or 0) or None, lambda: self.shutdown(0))
        self.link = Link(self.loop, link_fd, self.on_line, lambda: self.shutdown(0))
        self.loop.watch_children(self.reap)
        self.workspace = Workspace(WORKSPACE_OWNED)
        # While the zygote preloads, off every call's path.
        self.kernels = Kernels(self.loop, self.on_kernel_message,
                               while_booting=load_archive if WORKSPACE_OWNED else lambda: None)
        self.session = Session(self.kernels, self.reap)
        self.shells = Shells(oom, lambda k: self.runner.call_of(k))
        self.meter = CpuMeter(self.loop, self.kernels, self.reap)
        self.artifacts = Artifacts(WORK)
        # The image's font cache, read once: put back into /tmp/.mpl after every one-shot call.
        self.mpl_prebuilt = cleanup.read_prebuilt(MPL_PREBUILT)
        self.runner = Runner(self)
        self.kernelops = KernelOps(self.loop, self.kernels, self.session, self.runner.next_seq)
        self.snapshots = Snapshots(self.kernelops, WORK)
        self.ops = Ops(self)

    def on_line(self, line):
        """One request line from Airlock."""
        try:
            req = json.loads(line)
            if not isinstance(req, dict):
                raise ValueError("request is not an object")
        except ValueError as exc:
            self.link.emit({"t": "done", "id": None, "fail": "bad request: %s" % exc})
            return
        self.ops.on_request(req)

    def on_kernel_message(self, k, msg):
        """What kernel k said: the running call's or the pending question's (each takes
        only messages with its own seq, a done only with its own token)."""
        self.runner.on_message(k, msg)
        self.kernelops.on_message(k, msg)

    def reap(self):
        """Collect every exited child: the zygote (restarted), a shell call's bash (its
        status is the call's), or an orphan of a call (its CPU counts for that call)."""
        while True:
            try:
                pid, status, ru = os.wait4(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid == self.kernels.zygote_pid:
                self.kernels.zygote_died()
            elif not self.shells.reaped(pid, status, ru):
                self.meter.orphan_cpu += ru.ru_utime + ru.ru_stime

    def clean_files(self):
        """After a one-shot call: /work, /tmp, /dev/shm, /dev/mqueue, SysV IPC objects and
        an owned /workspace emptied."""
        cleanup.clear_dirs(CLEAN_DIRS)
        cleanup.clear_ipc()
        self.workspace.clean()
        cleanup.make_dirs(MADE_DIRS)
        cleanup.write_prebuilt(self.mpl_prebuilt, "/tmp/.mpl")

    def shutdown(self, code):
        """Kill every process and exit (Airlock gone, the maximum life, SIGTERM)."""
        try:
            cleanup.kill_everything()
            self.link.flush_blocking()
        finally:
            os._exit(code)

    def run(self):
        """Boot (the zygote preloaded, the first spare forked), say ready, serve forever."""
        cleanup.make_dirs(MADE_DIRS)
        cleanup.write_prebuilt(self.mpl_prebuilt, "/tmp/.mpl")
        if self.workspace.owned:
            self.workspace.seal()
        # Before any user code: the relay's port is then ours (a door only with a policy).
        egress_port = egress.start()
        self.kernels.start_zygote()
        self.kernels.refill()
        if self.kernels.spares:
            self.kernels.wait_pid(self.kernels.spares[0])
        self.kernels.prearm()  # no call has run: the first one finds its spare armed
        ready = {"t": "ready", "pid": os.getpid(), "boot_ms": round((now() - self.loop.t0) * 1000, 3),
                 "features": ["cpu_seconds", "snap_inline", "started", "stretch"] + (["archive", "archive_stream"] if self.workspace.owned else [])
                 + (["egress"] if egress_port else [])}
        if os.getpid() != 1:
            # Airlock accepts the link only from the container's pid 1; a pid 1 of our uid
            # (docker-init) would also be dumpable, its /proc/1/fd open to user code.
            ready["warnings"] = ["the controller is not pid 1: run it without --init"]
        self.link.emit(ready)
        while True:
            if self.ops.queue:
                self.ops.handle(self.ops.queue.popleft())
            else:
                self.loop.poll(None)


def main():
    if os.getuid() == 0:
        sys.exit("controller: refusing to run as root (it kills every process of its uid)")
    # First thing, before any other process exists in the container: the link to Airlock
    # (Airlock accepts one connection, from this pid, then removes the socket).
    link_fd = connect()
    # Inherited by the zygote and kernels forked from here on (airlock_sched).
    sched.request_slice(os.environ.get("AIRLOCK_SCHED_SLICE_US"))
    # Opened while still dumpable (afterwards /proc/self is root's): a shell call's spawn
    # raises the controller's own score so the shell inherits 1000, then puts it back.
    oom = OomScore()
    try:
        ctypes.CDLL(None).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    # SIGINT is handled (by doing nothing), not ignored: an ignored signal would stay
    # ignored in the shells the controller starts, and interrupts could not stop them.
    signal.signal(signal.SIGINT, lambda *_: None)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    c = Controller(oom, link_fd)
    # As pid 1 (no docker-init) a signal without a handler is ignored: docker stop's SIGTERM
    # must end the container at once. Orphans are reaped in Controller.reap.
    signal.signal(signal.SIGTERM, lambda *_: c.shutdown(143))
    c.run()


if __name__ == "__main__":
    main()
