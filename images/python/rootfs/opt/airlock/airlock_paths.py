"""The controller's absolute paths, opened without a lookup in the image's root folder.

With Docker's fuse-overlayfs storage the first step of every absolute path, the image's
root folder, is a round trip to the FUSE daemon: about 25 us on a quiet host, a
millisecond or more while the daemon serves a dying kernel and a new spare. The folders
the controller reads or empties on every call (/proc, the cgroup folder, /work, /tmp,
/dev/shm, /dev/mqueue, /workspace) are mount points of their own: each is opened once
(on first use, close-on-exec, never in a kernel) and a path under it is resolved from
that descriptor, as the kernel would resolve it from the root (a mount point cannot be
swapped for a link).
"""

import os

WORK = os.environ.get("AIRLOCK_WORK", "/work")
# Longest first: a folder under another one (a test's /tmp/w as /work) is its own root.
ROOTS = tuple(sorted({"/proc", "/sys/fs/cgroup", WORK, "/tmp", "/dev/shm", "/dev/mqueue", "/workspace"},
                     key=len, reverse=True))
_fds = {}  # root -> its descriptor, or None if it could not be opened


def locate(path):
    """(dir_fd, rest) for an absolute path: rest relative to the descriptor of the kept
    folder it lies under ("." for the folder itself), or (None, path) for any other path
    (os functions then resolve it as given)."""
    for root in ROOTS:
        if path == root or path.startswith(root + "/"):
            if root not in _fds:
                try:
                    _fds[root] = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
                except OSError:
                    _fds[root] = None
            fd = _fds[root]
            if fd is None:
                break
            return fd, path[len(root) + 1:] or "."
    return None, path


def open(path, flags, mode=0o777):
    """os.open of path through locate."""
    fd, rest = locate(path)
    return os.open(rest, flags | os.O_CLOEXEC, mode, dir_fd=fd)


def listdir(path):
    """os.listdir of a folder through locate."""
    fd, rest = locate(path)
    if fd is not None and rest == ".":
        return os.listdir(fd)
    sub = os.open(rest, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=fd)
    try:
        return os.listdir(sub)
    finally:
        os.close(sub)


def makedirs(path, mode=0o777):
    """os.makedirs(path, exist_ok=True) through locate."""
    fd, rest = locate(path)
    if fd is None:
        os.makedirs(path, mode, exist_ok=True)
        return
    parts = [p for p in rest.split("/") if p not in ("", ".")]
    for i in range(len(parts)):
        try:
            os.mkdir("/".join(parts[:i + 1]), mode, dir_fd=fd)
        except FileExistsError:
            pass


def chmod(path, mode):
    """os.chmod of path (links followed) through locate."""
    fd, rest = locate(path)
    os.chmod(rest, mode, dir_fd=fd)


def lstat(path):
    """os.lstat of path through locate."""
    fd, rest = locate(path)
    return os.stat(rest, dir_fd=fd, follow_symlinks=False)
