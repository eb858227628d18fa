"""Session snapshots on the controller's side (issue 30): the queued ops snapshot, snapread,
snapwrite, restore and snapclear.

snapshot asks the session's kernel to save its namespace with dill (airlock_namespace, in
the kernel: the bytes are made and read only inside this sandbox) into SNAP_DIR/ns, then
packs /work into SNAP_DIR/work (an uncompressed tar, links kept as links), within
max_bytes for the two together. Airlock reads both in chunks (snapread), stores them, and
later writes them into a fresh session's container (snapwrite) and sends restore: /work
is emptied and the tar unpacked into it with the archive rules (no entry leaves /work),
then, with "namespace", the kernel loads the names and the session's execution count goes
on from the one saved. snapclear removes the files.
SNAP_DIR is under /tmp (the container's size-capped tmpfs): a snapshot needs that room.
"""

import base64
import hashlib
import io
import os
import stat
import tarfile

import airlock_archive as archive
import airlock_cleanup as cleanup
import airlock_files as files
import airlock_paths as paths
from airlock_kernelops import checked

SNAP_DIR = "/tmp/.airlock-snapshot"
PARTS = ("ns", "work")
SNAPSHOT_S = 300.0  # dill on a large namespace; a kernel that has not answered is killed
DEFAULT_MAX = 1 << 30
MAX_ENTRIES = 100000
CHUNK = 8 << 20
MAX_COUNT = 1 << 31  # an execution count beyond this from the kernel is ignored


class Snapshots:
    """The snapshot ops of one controller."""

    def __init__(self, kernelops, work):
        self.kernelops = kernelops
        self.work = work

    def path(self, part):
        if part not in PARTS:
            raise ValueError("part must be one of %s" % ", ".join(PARTS))
        return os.path.join(SNAP_DIR, part)

    def snapclear(self, _req):
        """Remove the snapshot files."""
        cleanup.clear_dirs([SNAP_DIR])
        return {"cleared": True}

    def _open(self, part, flags=os.O_RDONLY, mode=0o600):
        """A part's file as a binary file object (opened through airlock_paths)."""
        return os.fdopen(paths.open(self.path(part), flags | os.O_NOFOLLOW, mode), "rb" if flags == os.O_RDONLY else "wb")

    def _fresh_dir(self):
        paths.makedirs(SNAP_DIR, 0o700)
        st = paths.lstat(SNAP_DIR)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
            raise ValueError("%s is not the controller's folder" % SNAP_DIR)
        cleanup.clear_dirs([SNAP_DIR])

    def snapshot(self, req):
        """Save the namespace and pack /work; the report and both parts' sizes and digests."""
        limit = req.get("max_bytes")
        limit = limit if type(limit) is int and limit > 0 else DEFAULT_MAX
        self._fresh_dir()
        q = self.kernelops.ask({"op": "snapshot", "path": self.path("ns"), "max_bytes": limit,
                                "execution_count": self.kernelops.session.count}, SNAPSHOT_S)
        reply = checked(q)
        if reply.get("error"):
            cleanup.clear_dirs([SNAP_DIR])
            raise ValueError("the namespace could not be saved: %s" % reply["error"])
        ns_bytes = paths.lstat(self.path("ns")).st_size
        try:
            entries = self._pack(limit - ns_bytes)
        except ValueError:
            cleanup.clear_dirs([SNAP_DIR])
            raise
        out = {"names": reply.get("names") or [], "modules": reply.get("modules") or {},
               "skipped": reply.get("skipped") or [], "work_entries": entries,
               "parts": {p: self._digest(p) for p in PARTS}}
        inline = req.get("inline_max")
        if type(inline) is int and inline > 0 and sum(d["size"] for d in out["parts"].values()) <= min(inline, CHUNK):
            # Small enough to go in this done frame: no snapread or snapclear round trips.
            out["inline"] = {}
            for p in PARTS:
                with self._open(p) as f:
                    out["inline"][p] = base64.b64encode(f.read()).decode("ascii")
            cleanup.clear_dirs([SNAP_DIR])
        return out

    def _digest(self, part):
        h = hashlib.sha256()
        n = 0
        with self._open(part) as f:
            while True:
                b = f.read(1 << 20)
                if not b:
                    break
                h.update(b)
                n += len(b)
        return {"size": n, "sha256": h.hexdigest()}

    def _pack(self, room):
        """Tar /work (folders, regular files, links; a file's further hard links as links)
        into the work part within room bytes. Walked from a folder descriptor, no link
        followed; entries carry numeric owners only (tarfile's own add looks each one up
        in /etc/passwd and /etc/group, files of the image: 0.2 ms an entry)."""
        n, seen, entered = 0, {}, None
        root = paths.open(self.work, os.O_RDONLY | os.O_DIRECTORY)
        try:
            with self._open("work", os.O_WRONLY | os.O_CREAT | os.O_TRUNC) as raw, \
                    tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
                for kind, dfd, name, rel, st, _ in files.tree(root, max_depth=archive.MAX_DEPTH - 1):
                    if kind == "leave":
                        continue
                    if kind == "skip":
                        if rel != entered:
                            raise ValueError("/work has folders nested %d deep; a snapshot keeps at most %d levels"
                                             % (archive.MAX_DEPTH, archive.MAX_DEPTH - 1))
                        continue  # a folder its owner made unreadable: packed empty
                    if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode) or stat.S_ISLNK(st.st_mode)):
                        continue
                    n += 1
                    if n > MAX_ENTRIES:
                        raise ValueError("/work has more than %d entries" % MAX_ENTRIES)
                    if kind == "enter":
                        entered = rel
                    _add(tar, dfd, name, rel, st, seen)
                    if raw.tell() > room:
                        raise ValueError("the snapshot is over its %d-byte bound (namespace and /work)" % (room,))
        finally:
            os.close(root)
        if paths.lstat(self.path("work")).st_size > room:
            raise ValueError("the snapshot is over its byte bound (namespace and /work)")
        return n

    def _continue_count(self, n):
        """The session's execution count goes on from the snapshot's (a woken or forked
        session numbers its next call after the last one saved), never back (a restore
        into a session that ran more calls). The kernel reports n: only a sane int
        counts."""
        session = self.kernelops.session
        if type(n) is int and 0 < n <= MAX_COUNT:
            session.count = max(session.count, n)

    def snapread(self, req):
        """At most length bytes of a part from offset, with the part's size."""
        length = min(int(req.get("length") or CHUNK), CHUNK)
        offset = int(req.get("offset") or 0)
        with self._open(req.get("part")) as f:
            size = os.fstat(f.fileno()).st_size
            f.seek(offset)
            data = f.read(length)
        return {"size": size, "data": base64.b64encode(data).decode("ascii")}

    def snapwrite(self, req):
        """Write a chunk of a part: offset 0 starts it, a larger one must be its size."""
        if not isinstance(req.get("data", ""), str):
            raise ValueError("data must be base64 text")
        data = base64.b64decode(req.get("data", ""), validate=True)
        offset = int(req.get("offset") or 0)
        path = self.path(req.get("part"))
        if offset == 0:
            try:
                fresh = not stat.S_ISDIR(paths.lstat(SNAP_DIR).st_mode)
            except OSError:
                fresh = True
            if fresh:
                self._fresh_dir()
            flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW
        else:
            flags = os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW
        fd = paths.open(path, flags, 0o600)
        try:
            if offset and os.fstat(fd).st_size != offset:
                raise ValueError("offset %d is not the part's size %d" % (offset, os.fstat(fd).st_size))
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            return {"size": os.fstat(fd).st_size}
        finally:
            os.close(fd)

    def restore(self, req):
        """Unpack the work part into an emptied /work and, with mode "namespace", load the
        namespace part into the session's kernel; the kernel's report."""
        mode = req.get("mode") or "namespace"
        if mode not in ("namespace", "files"):
            raise ValueError("mode must be namespace or files")
        limit = req.get("max_bytes")
        limit = limit if type(limit) is int and limit > 0 else DEFAULT_MAX
        try:
            with self._open("work") as f:
                data = f.read(limit + 1)
            if len(data) > limit:
                raise ValueError("the work part is over %d bytes" % limit)
            files.clear_dir(self.work)
            entries = _unpack(self.work, data, limit) if data else 0
            cleanup.make_dirs([os.path.join(self.work, "outputs")])
            reply = {"names": [], "skipped": []}
            if mode == "namespace":
                reply = checked(self.kernelops.ask({"op": "restore", "path": self.path("ns")}, SNAPSHOT_S))
                if reply.get("error"):
                    raise ValueError("the namespace could not be loaded: %s" % reply["error"])
                self._continue_count(reply.get("execution_count"))
        finally:
            cleanup.clear_dirs([SNAP_DIR])
        return {"names": reply.get("names") or [], "modules": reply.get("modules") or {},
                "skipped": reply.get("skipped") or [], "work_entries": entries}


def _add(tar, dfd, name, rel, st, seen):
    """Add one entry of a folder open as dfd to tar, from its lstat st; seen maps a
    regular file's (device, inode) to its name in the tar when it has more links."""
    ti = tarfile.TarInfo(rel)
    ti.mode, ti.uid, ti.gid, ti.mtime = stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid, st.st_mtime
    if stat.S_ISDIR(st.st_mode):
        ti.type = tarfile.DIRTYPE
        tar.addfile(ti)
        return
    if stat.S_ISLNK(st.st_mode):
        ti.type, ti.linkname = tarfile.SYMTYPE, os.readlink(name, dir_fd=dfd)
        tar.addfile(ti)
        return
    key = (st.st_dev, st.st_ino)
    if st.st_nlink > 1 and key in seen:
        ti.type, ti.linkname = tarfile.LNKTYPE, seen[key]
        tar.addfile(ti)
        return
    if st.st_nlink > 1:
        seen[key] = rel
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dfd)
    with os.fdopen(fd, "rb") as f:
        ti.size = os.fstat(fd).st_size
        tar.addfile(ti, f)


def _unpack(root, data, limit):
    """Unpack a tar into root with the archive rules (nothing leaves root); folders end
    up 0755 and files writable by their owner (not read-only as a call's input is)."""
    bounds = archive.Bounds(len(data), MAX_ENTRIES, limit, 1 << 30)
    w = archive.Writer(root)
    try:
        archive._untar(w, io.BytesIO(data), "tar", bounds)
        w.verify_links()
        for kind, dfd, name, _, st, sub in files.tree(w.rootfd, max_depth=archive.MAX_DEPTH + 1):
            if kind == "leave":
                os.fchmod(sub, 0o755)
            elif kind == "file" and stat.S_ISREG(st.st_mode):
                # The archive rules make files read-only (a call's input); the
                # session wrote these and keeps writing them.
                os.chmod(name, st.st_mode | 0o200, dir_fd=dfd)
    finally:
        w.close()
    return bounds.entries
