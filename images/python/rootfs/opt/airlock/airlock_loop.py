"""The controller's one event loop: a selector over its fds, SIGCHLD, and deadlines.

Single-threaded: every callback runs from Loop.poll. Components that must wake at a
time (coalesced output, a kernel's exit report) register a ticker: before each select
its prepare() returns when it next needs to run (or None), after it its tick() runs.
"""

import os
import selectors
import signal
import time


def now():
    """The controller's clock (monotonic seconds)."""
    return time.monotonic()


class Loop:
    """A selector with the container's life bound, SIGCHLD and tickers."""

    def __init__(self, max_life, on_life_end):
        self.t0 = now()
        self.max_life = max_life  # seconds from t0, or None
        self.on_life_end = on_life_end
        self.sel = selectors.DefaultSelector()
        self.tickers = []
        self.on_child = None
        self.wake_r, self.wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)

    def watch_children(self, on_child):
        """Call on_child() from the loop whenever SIGCHLD arrives."""
        self.on_child = on_child
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.set_wakeup_fd(self.wake_w, warn_on_full_buffer=False)
        self.watch(self.wake_r, selectors.EVENT_READ, self._on_wake)

    def _on_wake(self, _fd):
        try:
            while os.read(self.wake_r, 512):
                pass
        except BlockingIOError:
            pass
        self.on_child()

    def watch(self, fd, events, callback):
        """callback(fd) runs when fd is ready for events."""
        self.sel.register(fd, events, callback)

    def unwatch(self, fd):
        """Stop watching fd (fine if it was not watched)."""
        try:
            self.sel.unregister(fd)
        except (KeyError, ValueError):
            pass

    def poll(self, timeout):
        """Wait at most timeout seconds (None: until something happens) and run what is
        due. Ends the container (on_life_end) once its maximum life has passed."""
        due = []
        if self.max_life is not None:
            left = self.t0 + self.max_life - now()
            if left <= 0:
                self.on_life_end()
            due.append(self.t0 + self.max_life)
        for t in self.tickers:
            d = t.prepare()
            if d is not None:
                due.append(d)
        if due:
            left = min(due) - now()
            timeout = left if timeout is None else min(timeout, left)
        for key, _mask in self.sel.select(None if timeout is None else max(0, timeout)):
            key.data(key.fd)
        for t in list(self.tickers):
            t.tick()
