"""Airlock zygote: a preloaded interpreter that forks kernels for the controller.

Started by the controller as `python3 zygote.py FD`, FD being its end of a unix
socketpair. With AIRLOCK_PRELOAD=1 it imports numpy, pandas, matplotlib (Agg,
pyplot patched for figure capture) and pyflakes, and runs nothing else. Messages (airlock_wire):
  controller -> zygote  {"op": "fork", "tag": n} + 1 fd: the new kernel's control socket
  zygote -> controller  {"t": "ready", "pid"}  {"t": "forked", "tag", "pid"}
                        {"t": "forked", "tag", "pid": null, "error"} (fork failed)
                        {"t": "exit", "pid", "exit_code" | "signal", "cpu_s"}
The zygote reaps its children (the kernels) and reports every exit.
"""

import _signal
import ctypes
import gc
import os
import select
import signal
import socket
import sys

import airlock_wire as wire
import kernel

PR_SET_DUMPABLE = 4


def main():
    try:
        ctypes.CDLL(None).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    sock = socket.socket(fileno=int(sys.argv[1]))
    sock.setblocking(True)
    if os.environ.get("AIRLOCK_PRELOAD", "") == "1":
        kernel.preload()
    wake = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.set_wakeup_fd(wake[1], warn_on_full_buffer=False)
    gc.collect()
    gc.freeze()  # keep the preloaded objects' pages shared with the kernels
    wire.send(sock, {"t": "ready", "pid": os.getpid()})
    serve(sock, wake)


def serve(sock, wake):
    """Fork a kernel for every fork request, report every exit; until the controller goes."""
    reader = wire.Reader(sock)
    poller = select.poll()
    poller.register(sock.fileno(), select.POLLIN)
    poller.register(wake[0], select.POLLIN)
    while True:
        try:
            events = poller.poll()
        except InterruptedError:
            continue
        for fd, _ev in events:
            if fd == wake[0]:
                try:
                    while os.read(wake[0], 512):
                        pass
                except BlockingIOError:
                    pass
                reap(sock)
                continue
            if not reader.fill():
                os._exit(0)  # the controller is gone
            while True:
                msg = reader.next()
                if msg is None:
                    break
                if msg.get("op") == "fork":
                    fds = reader.take_fds(1)
                    if fds:
                        fork(sock, msg.get("tag"), fds[0], wake)
        reap(sock)


def fork(sock, tag, ctl_fd, wake):
    """Fork a kernel whose control socket is ctl_fd and say so (or that it failed)."""
    # The kernel starts with every signal blocked (from before the fork, so there is no
    # window): a spare waits, blocked, while other calls run, and unblocks only once it
    # takes its own (kernel.Kernel.arm).
    # _signal, not signal: its wrappers turn every signal number into an enum member, and
    # each object the zygote touches after a fork is a copy-on-write fault (a spare still
    # shares its pages).
    mask = _signal.pthread_sigmask(_signal.SIG_BLOCK, _signal.valid_signals())
    pid = -1
    try:
        pid = os.fork()
    except OSError as exc:  # the pids limit, memory: that kernel is not started
        os.close(ctl_fd)
        wire.send(sock, {"t": "forked", "tag": tag, "pid": None, "error": str(exc)})
        return
    finally:
        if pid != 0:
            _signal.pthread_sigmask(_signal.SIG_SETMASK, mask)
    if pid == 0:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        sock.detach()
        for fd in wake:
            os.close(fd)
        kernel.child_main(ctl_fd)
        os._exit(0)
    os.close(ctl_fd)
    wire.send(sock, {"t": "forked", "tag": tag, "pid": pid})


def reap(sock):
    """Report every kernel that exited, with its rusage."""
    while True:
        try:
            pid, status, ru = os.wait4(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        # rusage of the kernel and every child it waited for: the call's CPU time.
        msg = {"t": "exit", "pid": pid, "cpu_s": ru.ru_utime + ru.ru_stime}
        if os.WIFSIGNALED(status):
            msg["signal"] = os.WTERMSIG(status)
        else:
            msg["exit_code"] = os.WEXITSTATUS(status)
        wire.send(sock, msg)


if __name__ == "__main__":
    main()
