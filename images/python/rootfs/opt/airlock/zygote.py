"""Airlock zygote: a preloaded interpreter that forks kernels for the controller.

Started by the controller as `python3 zygote.py FD`, FD being its end of a unix
socketpair. With AIRLOCK_PRELOAD=1 it imports numpy, pandas and matplotlib (Agg,
pyplot patched for figure capture) and runs nothing else. Messages (airlock_wire):
  controller -> zygote  {"op": "fork", "tag": n} + 1 fd: the new kernel's control socket
  zygote -> controller  {"t": "ready", "pid"}  {"t": "forked", "tag", "pid"}
                        {"t": "forked", "tag", "pid": null, "error"} (fork failed)
                        {"t": "exit", "pid", "exit_code" | "signal", "cpu_s"}
The zygote reaps its children (the kernels) and reports every exit.
"""

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
    rfd, wfd = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.set_wakeup_fd(wfd, warn_on_full_buffer=False)
    gc.collect()
    gc.freeze()  # keep the preloaded objects' pages shared with the kernels
    reader = wire.Reader(sock)
    wire.send(sock, {"t": "ready", "pid": os.getpid()})
    poller = select.poll()
    poller.register(sock.fileno(), select.POLLIN)
    poller.register(rfd, select.POLLIN)
    while True:
        try:
            events = poller.poll()
        except InterruptedError:
            continue
        for fd, _ev in events:
            if fd == rfd:
                try:
                    while os.read(rfd, 512):
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
                if msg.get("op") != "fork":
                    continue
                fds = reader.take_fds(1)
                if not fds:
                    continue
                # The kernel starts with every signal blocked (from before the fork, so
                # there is no window): a spare waits, blocked, while other calls run, and
                # unblocks only once it takes its own (kernel.Kernel.arm).
                mask = signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())
                pid = -1
                try:
                    pid = os.fork()
                except OSError as exc:  # the pids limit, memory: that kernel is not started
                    os.close(fds[0])
                    wire.send(sock, {"t": "forked", "tag": msg.get("tag"), "pid": None, "error": str(exc)})
                    continue
                finally:
                    if pid != 0:
                        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
                if pid == 0:
                    signal.set_wakeup_fd(-1)
                    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                    sock.detach()
                    os.close(rfd)
                    os.close(wfd)
                    kernel.child_main(fds[0])
                    os._exit(0)
                os.close(fds[0])
                wire.send(sock, {"t": "forked", "tag": msg.get("tag"), "pid": pid})
        reap(sock)


def reap(sock):
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
