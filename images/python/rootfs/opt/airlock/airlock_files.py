"""Safe file operations under the work folder, for the controller.

Every path is opened one component at a time with O_NOFOLLOW relative to an
already-open directory, so a symlink can never lead outside the work folder, even
if it is swapped in while a file is being read. FIFOs and devices are refused
without blocking (O_NONBLOCK).
"""

import os
import stat

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


def open_dir(work, parts, create=False):
    """Open work/parts... as a directory fd, never following a symlink."""
    fd = os.open(work, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for p in parts:
            if create:
                try:
                    os.mkdir(p, 0o755, dir_fd=fd)
                except FileExistsError:
                    pass
            nfd = os.open(p, DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = nfd
        return fd
    except BaseException:
        os.close(fd)
        raise


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
        root = os.open(work, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return
    stack = [(root, "", 0)]
    seen = 0
    try:
        while stack:
            dfd, prefix, depth = stack.pop()
            try:
                try:
                    names = sorted(os.listdir(dfd))
                except OSError:
                    names = []
                for n in names:
                    seen += 1
                    if seen > max_entries:
                        return
                    try:
                        st = os.stat(n, dir_fd=dfd, follow_symlinks=False)
                    except OSError:
                        continue
                    if stat.S_ISDIR(st.st_mode):
                        if depth < max_depth:
                            try:
                                stack.append((os.open(n, DIR_FLAGS, dir_fd=dfd), prefix + n + "/", depth + 1))
                            except OSError:
                                pass
                    elif stat.S_ISREG(st.st_mode):
                        yield dfd, n, prefix + n, st
            finally:
                os.close(dfd)
    finally:
        for dfd, _, _ in stack:
            try:
                os.close(dfd)
            except OSError:
                pass


def clear_dir(path):
    """Remove everything inside path (not path itself), never following symlinks;
    directories made unreadable by their owner are opened up first. Returns the
    number of entries that could not be removed."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return 0
    try:
        return _clear(fd, 0)
    finally:
        os.close(fd)


def _clear(dfd, depth):
    failed = 0
    try:
        names = os.listdir(dfd)
    except OSError:
        return 1
    for n in names:
        try:
            st = os.stat(n, dir_fd=dfd, follow_symlinks=False)
        except OSError:
            continue
        if stat.S_ISDIR(st.st_mode):
            if depth > 64:
                failed += 1
                continue
            try:
                os.chmod(n, 0o700, dir_fd=dfd, follow_symlinks=False)
            except (OSError, NotImplementedError):
                pass
            try:
                sub = os.open(n, DIR_FLAGS, dir_fd=dfd)
            except OSError:
                failed += 1
                continue
            try:
                failed += _clear(sub, depth + 1)
            finally:
                os.close(sub)
            try:
                os.rmdir(n, dir_fd=dfd)
            except OSError:
                failed += 1
        else:
            try:
                os.unlink(n, dir_fd=dfd)
            except OSError:
                failed += 1
    return failed
