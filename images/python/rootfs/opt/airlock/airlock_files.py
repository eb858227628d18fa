"""Safe file operations under a folder, for the controller and the archive unpacker.

Every path is opened one component at a time with O_NOFOLLOW relative to an
already-open directory (open_dir), so a symlink can never lead outside the folder,
even if it is swapped in while a file is being read; every tree is walked the same
way (tree). FIFOs and devices are refused without blocking (O_NONBLOCK).
"""

import os
import stat

import airlock_paths as paths

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def split(work, path):
    """Split a path relative to work into components; refuse absolute paths and '..'."""
    if not isinstance(path, str):
        raise ValueError("path must be a string")
    if path.startswith(work + "/"):
        path = path[len(work) + 1:]
    if path.startswith("/"):
        raise ValueError("path must be relative to %s: %r" % (work, path))
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if ".." in parts or "\x00" in path:
        raise ValueError("path must not contain '..' or NUL: %r" % path)
    return parts


class NotAFolder(OSError):
    """A path component that should be a folder is a link, a file or missing; its name is
    the exception's filename."""


def open_dir(root, parts, create=False):
    """Open root/parts... as a folder fd, one component at a time relative to the folder
    opened before it (O_DIRECTORY | O_NOFOLLOW), so no symlink is ever followed; with
    create, missing folders are made (0755). root is a path or an open folder fd (kept
    open). Raises NotAFolder naming the component that could not be opened."""
    if isinstance(root, int):
        fd = os.dup(root)
    else:
        fd = paths.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for p in parts:
            if create:
                try:
                    os.mkdir(p, 0o755, dir_fd=fd)
                except FileExistsError:
                    pass
            try:
                nfd = os.open(p, DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                raise NotAFolder(exc.errno, exc.strerror, p) from None
            os.close(fd)
            fd = nfd
        return fd
    except BaseException:
        os.close(fd)
        raise


def tree(dfd, max_depth=64, max_entries=None, _prefix="", _depth=0, _seen=None):
    """Walk the folder open as dfd without ever following a symlink. Yields
    (kind, parent_fd, name, rel, st, sub) for every entry, a folder's names sorted, its
    non-folders first, then its folders last-first, each walked completely:
      "file"  anything but a folder (check st for regular files, links, others);
      "enter" a folder about to be walked (its mode may still be changed);
      "leave" that folder once its entries came, sub its open fd;
      "skip"  a folder not walked (deeper than max_depth, or it cannot be opened).
    Folders are opened by name relative to their parent's fd (O_NOFOLLOW). parent_fd and
    sub are valid until the next item. Past max_entries names the walk stops."""
    seen = _seen if _seen is not None else [0]
    try:
        names = sorted(os.listdir(dfd))
    except OSError:
        return
    folders = []
    for n in names:
        seen[0] += 1
        if max_entries is not None and seen[0] > max_entries:
            return
        try:
            st = os.stat(n, dir_fd=dfd, follow_symlinks=False)
        except OSError:
            continue
        if stat.S_ISDIR(st.st_mode):
            folders.append((n, st))
        else:
            yield "file", dfd, n, _prefix + n, st, None
    for n, st in reversed(folders):
        rel = _prefix + n
        if _depth >= max_depth:
            yield "skip", dfd, n, rel, st, None
            continue
        yield "enter", dfd, n, rel, st, None
        try:
            sub = os.open(n, DIR_FLAGS, dir_fd=dfd)
        except OSError:
            yield "skip", dfd, n, rel, st, None
            continue
        try:
            yield from tree(sub, max_depth, max_entries, rel + "/", _depth + 1, seen)
            if max_entries is not None and seen[0] > max_entries:
                return
            yield "leave", dfd, n, rel, st, sub
        finally:
            os.close(sub)


def read_file(dfd, name, max_bytes):
    """Read a regular file relative to dfd without following symlinks; (data, stat)."""
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dfd)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ValueError("not a regular file: %s" % name)
        if st.st_size > max_bytes:
            raise ValueError("file is %d bytes, over the %d-byte limit" % (st.st_size, max_bytes))
        chunks, total = [], 0
        while True:
            b = os.read(fd, 1 << 20)
            if not b:
                break
            total += len(b)
            if total > max_bytes:
                raise ValueError("file grew over the %d-byte limit" % max_bytes)
            chunks.append(b)
        return b"".join(chunks), st
    finally:
        os.close(fd)


def write_file(work, path, data, offset=0):
    """Write data to work/path (parents created); returns the file's stat.

    offset 0 creates or replaces the file; a larger offset appends at exactly
    that offset, which must be the file's current size (no gap, no overwrite)."""
    if offset < 0:
        raise ValueError("offset must not be negative")
    parts = split(work, path)
    if not parts:
        raise ValueError("path names the work folder itself")
    dfd = open_dir(work, parts[:-1], create=True)
    try:
        flags = os.O_WRONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        if offset == 0:
            flags |= os.O_CREAT
        fd = os.open(parts[-1], flags, 0o644, dir_fd=dfd)
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise ValueError("not a regular file: %s" % path)
            if offset == 0:
                os.ftruncate(fd, 0)
            elif st.st_size != offset:
                raise ValueError("offset %d is not the file's size %d (chunks must follow each other)" % (offset, st.st_size))
            else:
                os.lseek(fd, offset, os.SEEK_SET)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            return os.fstat(fd)
        finally:
            os.close(fd)
    finally:
        os.close(dfd)


def get_chunk(work, path, offset, length):
    """Read at most length bytes of work/path from offset; (data, total size)."""
    parts = split(work, path)
    if not parts:
        raise ValueError("path names the work folder itself")
    if offset < 0 or length < 0:
        raise ValueError("offset and length must not be negative")
    dfd = open_dir(work, parts[:-1])
    try:
        fd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dfd)
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise ValueError("not a regular file: %s" % path)
            chunks, got = [], 0
            while got < length:
                b = os.pread(fd, min(1 << 20, length - got), offset + got)
                if not b:
                    break
                chunks.append(b)
                got += len(b)
            return b"".join(chunks), st.st_size
        finally:
            os.close(fd)
    finally:
        os.close(dfd)


def get_file(work, path, max_bytes):
    """Read work/path; (data, stat)."""
    parts = split(work, path)
    if not parts:
        raise ValueError("path names the work folder itself")
    dfd = open_dir(work, parts[:-1])
    try:
        return read_file(dfd, parts[-1], max_bytes)
    finally:
        os.close(dfd)


def _kind(mode):
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "dir"
    if stat.S_ISLNK(mode):
        return "symlink"
    return "other"


def list_dir(work, path, limit=10000):
    """Entries of work/path: [{name, type, size, mtime}], sorted by name, at most limit."""
    dfd = open_dir(work, split(work, path))
    try:
        out = []
        for name in sorted(os.listdir(dfd))[:limit]:
            try:
                st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
            except OSError:
                continue
            out.append({"name": name, "type": _kind(st.st_mode), "size": st.st_size,
                        "mtime": round(st.st_mtime, 3)})
        return out
    finally:
        os.close(dfd)


def walk(work, max_entries=20000, max_depth=32):
    """Regular files under work: yields (dir_fd, name, rel_path, stat). dir_fd is valid only
    until the next item. Symlinks are never followed; deeper or further entries are skipped."""
    try:
        root = paths.open(work, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        for kind, dfd, name, rel, st, _ in tree(root, max_depth, max_entries):
            if kind == "file" and stat.S_ISREG(st.st_mode):
                yield dfd, name, rel, st
    finally:
        os.close(root)


def clear_dir(path):
    """Remove everything inside path (not path itself), never following symlinks;
    directories made unreadable by their owner are opened up first. Returns the
    number of entries that could not be removed."""
    try:
        fd = paths.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return 0
    failed = 0
    try:
        for kind, dfd, name, _, st, _ in tree(fd, max_depth=65):
            try:
                if kind == "file":
                    os.unlink(name, dir_fd=dfd)
                elif kind == "enter":
                    # Only where needed: glibc makes a chmod that follows no link an
                    # O_PATH open and a chmod of /proc/self/fd/N (a lookup from the
                    # image's root folder, slow on fuse-overlayfs).
                    if st.st_mode & 0o700 != 0o700:
                        try:
                            os.chmod(name, 0o700, dir_fd=dfd, follow_symlinks=False)
                        except (OSError, NotImplementedError):
                            pass
                elif kind == "leave":
                    os.rmdir(name, dir_fd=dfd)
                else:
                    failed += 1
            except OSError:
                failed += 1
    finally:
        os.close(fd)
    return failed
