"""CPU accounting of a call (done "cpu_seconds"; PROTOCOL.md "CPU time").

The container runs one call at a time, so a call's CPU is the container cgroup's
counter between the exec and the kernel's answer (or death), less what the controller,
the zygote and the spares used meanwhile. Without a readable cgroup: the kernel's own
accounting (its /proc stat, or the rusage in its exit report) plus the orphans the
controller reaped during the call.
"""

import time

import airlock_proc as proc
from airlock_loop import now


class CpuMeter:
    """Takes a call's CPU readings at its start and end and turns them into seconds."""

    def __init__(self, loop, kernels, reap):
        self.loop = loop
        self.kernels = kernels
        self.reap = reap  # reap(): collect exited children now (orphans' rusage)
        self.orphan_cpu = 0.0  # CPU seconds of reaped processes that were not our children

    def start(self, call):
        """Readings at the call's start (its kernel chosen, nothing sent yet). The call's
        CPU comes from the container's cgroup; the kernel's own counters are read only
        without one (proc_call_cpu): a session kernel's /proc/<pid>/stat, which sums every
        thread, costs about a tenth of a millisecond."""
        k = call.kernel
        call.orphans0 = self.orphan_cpu
        spares = list(self.kernels.spares)
        if all(sp.ready and sp.dead is None for sp in spares):
            # Set up and waiting for their call, signals blocked, out of the call's reach:
            # they use no CPU until one is taken, so there is nothing to subtract (and six
            # /proc reads fewer per call).
            call.spare0 = {}
        else:
            call.spare0 = {sp.pid: proc.thread_cpu(sp.pid) or 0.0 for sp in spares if sp.pid is not None}
        # Spares still being forked (a one-shot call does not wait for them): all their
        # CPU is their set-up, none of it the call's.
        call.spares_forking = [sp for sp in spares if sp.pid is None and sp.dead is None]
        call.cg = self.own_cpu()
        if call.cg is None and k.pid is not None:
            if call.kind == "session":
                c = proc.cpu(k.pid)
                call.cpu0 = c[1] if c else None
            else:
                call.cpu0 = proc.thread_cpu(k.pid)  # the spare's own start-up is not the call's

    def stop(self, call):
        """Readings when the kernel answered or died."""
        if call.cg is not None:
            call.cg_end = self.own_cpu()
            born = {sp.pid: 0.0 for sp in call.spares_forking if sp.pid is not None and sp.pid not in call.spare0}
            call.spare_used = self.spare_cpu_since({**call.spare0, **born})

    def own_cpu(self):
        """[container, controller, zygote] CPU seconds now; None if the cgroup is unreadable."""
        cg = proc.cgroup_cpu()
        if cg is None:
            return None
        zp = self.kernels.zygote_pid
        z = proc.thread_cpu(zp) if zp else 0.0
        return [cg, time.process_time(), z or 0.0]

    def spare_cpu_since(self, spare0):
        """CPU seconds the spares used since spare0 (pid -> CPU then). A pid counts only
        while the zygote is still its parent: code that killed a spare cannot have the CPU
        of a process of its own, given the pid, taken off its call's count."""
        used = 0.0
        for pid, c0 in spare0.items():
            if proc.ppid(pid) == self.kernels.zygote_pid:
                used += max(0.0, (proc.thread_cpu(pid) or c0) - c0)
        return used

    def call_cpu(self, call):
        """CPU seconds the call's processes used between the exec and the kernel's answer
        (or death): the container's cgroup counter, less what the controller, the zygote and
        the spares used meanwhile (a spare forked after the previous call may still be
        setting itself up). Without a readable cgroup: proc_call_cpu. None if unknown."""
        if call.cg is not None and call.cg_end is not None:
            a, b = call.cg, call.cg_end
            return max(0.0, (b[0] - a[0]) - (b[1] - a[1]) - max(0.0, b[2] - a[2]) - call.spare_used)
        return self.proc_call_cpu(call)

    def proc_call_cpu(self, call):
        """The kernel's own accounting (what it waited for included) plus the orphans the
        controller reaped during the call; None if unknown."""
        k = call.kernel
        self.reap()
        if k.dead is not None:
            # It exited: the zygote's exit report carries its rusage (wait4).
            end = now() + 0.2
            while k.cpu_s is None and k.pid is not None and k.pid in self.kernels.by_pid and now() < end:
                self.loop.poll(0.01)
            total = k.cpu_s
        else:
            c = proc.cpu(k.pid) if k.pid is not None else None
            total = c[1] if c else None
        if total is None or call.cpu0 is None:
            return None
        return max(0.0, total - call.cpu0) + max(0.0, self.orphan_cpu - call.orphans0)
