"""Unpacks a call's archive (tar, tar.gz or zip) into the workspace, for the controller.

Every entry is checked before any of its bytes is written: absolute paths, "..",
devices, FIFOs, sparse files, duplicates, hard links to anything but a regular file
unpacked before, symlinks whose target leaves the workspace, more than max_entries
entries, more than max_bytes unpacked or an unpack ratio above max_ratio (past
RATIO_FLOOR bytes) are refused with Refused naming the entry. Files are created one
path component at a time relative to open directory fds, with O_NOFOLLOW and O_EXCL,
so no entry can write through a link; once everything is written, every symlink is
resolved for real and must stay inside the workspace. The caller empties the
workspace when unpack raises.
"""

import gzip
import io
import json
import os
import posixpath
import stat
import tarfile
import zipfile

import airlock_files as files

MAX_ENTRIES = 10000
MAX_BYTES = 256 << 20
MAX_RATIO = 200
RATIO_FLOOR = 1 << 20  # archives unpacking to at most this are never refused for their ratio
MAX_DEPTH = 64  # path components
MAX_PATH = 4096
MAX_LINK = 4095
HEADER_SLACK = 16 << 20  # decompressed tar stream beyond the entries' data (headers, padding)


class Refused(ValueError):
    """The archive or one of its entries was refused; the message names the entry."""


def _q(name):
    return json.dumps(name, ensure_ascii=False)


def refuse_entry(name, why):
    raise Refused("archive entry %s: %s" % (_q(name), why))


def clean(name):
    """The components of an entry's name; refuses names that could leave the root."""
    if not name or name in (".", "./"):
        return []
    if "\x00" in name:
        refuse_entry(name, "the name contains NUL")
    if name.startswith("/"):
        refuse_entry(name, "absolute paths are not allowed")
    if len(name.encode("utf-8", "surrogateescape")) > MAX_PATH:
        refuse_entry(name, "the name is longer than %d bytes" % MAX_PATH)
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if ".." in parts:
        refuse_entry(name, "the path leaves /workspace (\"..\")")
    if len(parts) > MAX_DEPTH:
        refuse_entry(name, "nested deeper than %d folders" % MAX_DEPTH)
    for p in parts:
        if len(p.encode("utf-8", "surrogateescape")) > 255:
            refuse_entry(name, "a path component is longer than 255 bytes")
    return parts


def check_link_target(name, parts, target):
    """Refuse a symlink target that is absolute or leaves the root lexically."""
    if not target or "\x00" in target or len(target) > MAX_LINK:
        refuse_entry(name, "the link target is empty, too long or contains NUL")
    if target.startswith("/"):
        refuse_entry(name, "the link points outside /workspace (absolute target %s)" % _q(target))
    joined = posixpath.normpath(posixpath.join("/".join(parts[:-1]), target))
    if joined == ".." or joined.startswith("../"):
        refuse_entry(name, "the link points outside /workspace (target %s)" % _q(target))


class Bounds:
    """Running totals against the limits."""

    def __init__(self, packed, max_entries, max_bytes, max_ratio):
        self.packed = max(1, packed)
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.max_ratio = max_ratio
        self.entries = 0
        self.bytes = 0

    def entry(self, name):
        self.entries += 1
        if self.entries > self.max_entries:
            refuse_entry(name, "the archive has more than %d entries" % self.max_entries)

    def add(self, name, size):
        self.bytes += size
        if self.bytes > self.max_bytes:
            refuse_entry(name, "the archive unpacks to more than %d bytes" % self.max_bytes)
        if self.bytes > RATIO_FLOOR and self.bytes > self.max_ratio * self.packed:
            refuse_entry(name, "the archive unpacks to more than %d times its packed size of %d bytes "
                         "(a compression bomb?)" % (self.max_ratio, self.packed))


class Writer:
    """Creates entries under root without ever following a link."""

    def __init__(self, root):
        self.root = root
        self.rootfd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        self.cur = None  # (parts tuple, fd) of the last directory used
        self.seen = set()
        self.files = set()
        self.links = []

    def close(self):
        if self.cur is not None:
            os.close(self.cur[1])
            self.cur = None
        os.close(self.rootfd)

    def _open_dir(self, name, parts, create):
        try:
            return files.open_dir(self.rootfd, parts, create)
        except files.NotAFolder as exc:
            refuse_entry(name, "its folder %s is a link or a file" % _q(exc.filename))

    def parent(self, name, parts):
        key = tuple(parts[:-1])
        if self.cur is not None and self.cur[0] == key:
            return self.cur[1]
        fd = self._open_dir(name, parts[:-1], create=True)
        if self.cur is not None:
            os.close(self.cur[1])
        self.cur = (key, fd)
        return fd

    def claim(self, name, parts, is_dir=False):
        key = tuple(parts)
        if key in self.seen and not is_dir:
            refuse_entry(name, "the path appears twice in the archive")
        self.seen.add(key)

    def mkdir(self, name, parts):
        self.claim(name, parts, is_dir=True)
        if not parts:
            return
        dfd = self.parent(name, parts)
        try:
            os.mkdir(parts[-1], 0o755, dir_fd=dfd)
        except FileExistsError:
            try:
                os.close(os.open(parts[-1], files.DIR_FLAGS, dir_fd=dfd))
            except OSError:
                refuse_entry(name, "a file or link of the same name came before it")
        except OSError as exc:
            self._fail(name, exc)

    def write(self, name, parts, src, mode, bounds, size):
        if not parts:
            refuse_entry(name, "a file cannot be the workspace itself")
        self.claim(name, parts)
        dfd = self.parent(name, parts)
        try:
            fd = os.open(parts[-1], os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                         0o600, dir_fd=dfd)
        except FileExistsError:
            refuse_entry(name, "a folder or link of the same name came before it")
        except OSError as exc:
            self._fail(name, exc)
        try:
            got = 0
            while True:
                chunk = src.read(1 << 20)
                if not chunk:
                    break
                got += len(chunk)
                if got > size:
                    refuse_entry(name, "holds more data than its declared size %d" % size)
                view = memoryview(chunk)
                while view:
                    view = view[os.write(fd, view):]
            os.fchmod(fd, 0o555 if mode & 0o100 else 0o444)
        except OSError as exc:
            self._fail(name, exc)
        except (zipfile.BadZipFile, EOFError, tarfile.TarError, gzip.BadGzipFile) as exc:
            refuse_entry(name, "the data is corrupt (%s)" % exc)
        finally:
            os.close(fd)
        self.files.add(tuple(parts))

    def symlink(self, name, parts, target):
        if not parts:
            refuse_entry(name, "a link cannot be the workspace itself")
        check_link_target(name, parts, target)
        self.claim(name, parts)
        dfd = self.parent(name, parts)
        try:
            os.symlink(target, parts[-1], dir_fd=dfd)
        except FileExistsError:
            refuse_entry(name, "a file or folder of the same name came before it")
        except OSError as exc:
            self._fail(name, exc)
        self.links.append((name, parts))

    def hardlink(self, name, parts, target):
        try:
            tparts = clean(target)
        except Refused:
            refuse_entry(name, "the hard link points outside /workspace (target %s)" % _q(target))
        if tuple(tparts) not in self.files:
            refuse_entry(name, "a hard link must point to a regular file that comes before it in the "
                         "archive (target %s)" % _q(target))
        if not parts:
            refuse_entry(name, "a link cannot be the workspace itself")
        self.claim(name, parts)
        sfd = self._open_dir(name, tparts[:-1], create=False)
        try:
            dfd = self.parent(name, parts)
            os.link(tparts[-1], parts[-1], src_dir_fd=sfd, dst_dir_fd=dfd, follow_symlinks=False)
        except FileExistsError:
            refuse_entry(name, "a file or folder of the same name came before it")
        except OSError as exc:
            self._fail(name, exc)
        finally:
            os.close(sfd)
        self.files.add(tuple(parts))

    def _fail(self, name, exc):
        if exc.errno in (28, 27, 122):  # ENOSPC, EFBIG, EDQUOT
            refuse_entry(name, "it does not fit in /workspace (%s)" % (exc.strerror or exc))
        refuse_entry(name, "cannot be written (%s)" % (exc.strerror or exc))

    def verify_links(self):
        """Resolve every symlink for real: chains of links must stay inside the root."""
        for name, parts in self.links:
            real = os.path.realpath(os.path.join(self.root, *parts))
            if real != self.root and not real.startswith(self.root + "/"):
                refuse_entry(name, "the link points outside /workspace (through other links)")

    def seal(self):
        """Make every folder read-only (0555), deepest first, without following links."""
        for kind, _, _, _, _, sub in files.tree(self.rootfd, max_depth=MAX_DEPTH + 1):
            if kind == "leave":
                os.fchmod(sub, 0o555)
        os.fchmod(self.rootfd, 0o555)


class _Counted(io.RawIOBase):
    """A decompressed stream that refuses to produce more than limit bytes."""

    def __init__(self, f, limit):
        self.f, self.left = f, limit

    def readable(self):
        return True

    def readinto(self, b):
        try:
            data = self.f.read(min(len(b), 1 << 20))
        except (OSError, EOFError, gzip.BadGzipFile) as exc:
            raise Refused("the archive is not a valid tar.gz (%s)" % exc)
        self.left -= len(data)
        if self.left < 0:
            raise Refused("the archive unpacks to more than its bounds allow (a compression bomb?)")
        b[:len(data)] = data
        return len(data)


def detect(data):
    """'zip', 'tar.gz' or 'tar'; refuses other compressions."""
    if data[:4] in (b"PK\x03\x04", b"PK\x05\x06"):
        return "zip"
    if data[:2] == b"\x1f\x8b":
        return "tar.gz"
    if data[:3] == b"BZh":
        raise Refused("the archive is bzip2-compressed; send a tar, tar.gz or zip")
    if data[:6] == b"\xfd7zXZ\x00":
        raise Refused("the archive is xz-compressed; send a tar, tar.gz or zip")
    if data[:4] == b"\x28\xb5\x2f\xfd":
        raise Refused("the archive is zstd-compressed; send a tar, tar.gz or zip")
    return "tar"


def unpack(root, data, max_entries=MAX_ENTRIES, max_bytes=MAX_BYTES, max_ratio=MAX_RATIO):
    """Unpack data (tar, tar.gz or zip) into the empty folder root; returns
    {"format", "entries", "bytes"}. Raises Refused naming the first bad entry."""
    fmt = detect(data)
    bounds = Bounds(len(data), max_entries, max_bytes, max_ratio)
    w = Writer(root)
    try:
        if fmt == "zip":
            _unzip(w, data, bounds)
        else:
            _untar(w, io.BytesIO(data), fmt, bounds)
        w.verify_links()
        w.seal()
    finally:
        w.close()
    return {"format": fmt, "entries": bounds.entries, "bytes": bounds.bytes}


def unpack_stream(root, stream, head, packed, max_entries=MAX_ENTRIES, max_bytes=MAX_BYTES, max_ratio=MAX_RATIO):
    """Unpack a tar or tar.gz read from the file object stream (whose first bytes are head,
    already read from it by the caller's format check: detect(head)) into the empty folder
    root; packed is the stream's whole size, as its sender declared it. Returns
    {"format", "entries", "bytes"}; raises Refused like unpack. A zip needs its central
    directory first, so it cannot be streamed."""
    fmt = detect(head)
    if fmt == "zip":
        raise Refused("a streamed archive must be a tar or tar.gz, not a zip")
    bounds = Bounds(packed, max_entries, max_bytes, max_ratio)
    w = Writer(root)
    try:
        _untar(w, stream, fmt, bounds)
        w.verify_links()
        w.seal()
    finally:
        w.close()
    return {"format": fmt, "entries": bounds.entries, "bytes": bounds.bytes}


def _untar(w, raw, fmt, bounds):
    if fmt == "tar.gz":
        raw = io.BufferedReader(_Counted(gzip.GzipFile(fileobj=raw, mode="rb"), bounds.max_bytes + HEADER_SLACK),
                                buffer_size=1 << 16)
    try:
        tf = tarfile.open(fileobj=raw, mode="r|")
    except tarfile.TarError as exc:
        raise Refused("the archive is not a valid tar, tar.gz or zip (%s)" % exc)
    try:
        while True:
            try:
                m = tf.next()
            except (tarfile.TarError, EOFError) as exc:
                raise Refused("the archive is not a valid %s (%s)" % (fmt, exc))
            if m is None:
                break
            name = m.name
            bounds.entry(name)
            parts = clean(name)
            if m.isdir():
                w.mkdir(name, parts)
            elif m.issym():
                w.symlink(name, parts, m.linkname)
            elif m.islnk():
                w.hardlink(name, parts, m.linkname)
            elif m.ischr() or m.isblk():
                refuse_entry(name, "devices are not allowed")
            elif m.isfifo():
                refuse_entry(name, "FIFOs are not allowed")
            elif m.issparse():
                refuse_entry(name, "sparse files are not allowed")
            elif m.isreg():
                bounds.add(name, m.size)
                w.write(name, parts, tf.extractfile(m), m.mode, bounds, m.size)
            else:
                refuse_entry(name, "entries of type %r are not allowed" % m.type.decode("latin-1"))
    finally:
        tf.close()


def _unzip(w, data, bounds):
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, ValueError) as exc:
        raise Refused("the archive is not a valid zip (%s)" % exc)
    with zf:
        infos = zf.infolist()
        total = 0
        for info in infos:  # every bound first: the central directory lists them all
            bounds.entry(info.filename)
            clean(info.filename)
            total += info.file_size
            if total > bounds.max_bytes or (total > RATIO_FLOOR and total > bounds.max_ratio * bounds.packed):
                bounds.add(info.filename, total)
        for info in infos:
            name = info.filename
            parts = clean(name)
            mode = info.external_attr >> 16 if info.create_system == 3 else 0
            if info.flag_bits & 0x1:
                refuse_entry(name, "encrypted entries are not allowed")
            if stat.S_ISLNK(mode):
                if info.file_size > MAX_LINK:
                    refuse_entry(name, "the link target is longer than %d bytes" % MAX_LINK)
                try:
                    target = zf.read(info).decode("utf-8", "surrogateescape")
                except (zipfile.BadZipFile, NotImplementedError, EOFError, OSError) as exc:
                    refuse_entry(name, "the data is corrupt (%s)" % exc)
                w.symlink(name, parts, target)
            elif stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
                refuse_entry(name, "devices are not allowed")
            elif stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
                refuse_entry(name, "FIFOs and sockets are not allowed")
            elif name.endswith("/") or stat.S_ISDIR(mode):
                w.mkdir(name, parts)
            else:
                bounds.add(name, info.file_size)
                try:
                    src = zf.open(info)
                except (zipfile.BadZipFile, NotImplementedError, EOFError, OSError, RuntimeError) as exc:
                    refuse_entry(name, "cannot be read (%s)" % exc)
                with src:
                    w.write(name, parts, src, mode, bounds, info.file_size)
