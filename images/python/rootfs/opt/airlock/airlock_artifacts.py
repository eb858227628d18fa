"""A call's artifacts: files the controller itself reads from /work (never what the code
says), and the figures the kernel captured (the call's own output).

Image files (png/jpg/jpeg/gif/svg/webp) new or changed anywhere under /work, and any file
new or changed under /work/outputs, each returned once (path, mtime_ns, size remembered),
read with O_NOFOLLOW one component at a time; within max_artifacts / max_artifact_bytes,
with a warning for each one skipped.
"""

import base64
import hashlib
import mimetypes

import airlock_files as files

IMAGE_EXTS = (".png", ".jpg", ".jpeg", ".gif", ".svg", ".webp")


class Artifacts:
    """What has been returned (or skipped) already, and the collection of a call's."""

    def __init__(self, work):
        self.work = work
        self.reported = {}  # rel path -> (mtime_ns, size) already returned or skipped

    def forget(self):
        """A one-shot call: /work was emptied, every file is new."""
        self.reported = {}

    def mark(self, rel, st):
        """A file Airlock wrote itself (put) is not an artifact of the next call."""
        self.reported[rel] = (st.st_mtime_ns, st.st_size)

    def collect(self, req, figures, warnings):
        """The artifacts of a call: its figures (PNG bytes), then the files; a warning is
        appended to warnings for each one left out."""
        max_count = int(req.get("max_artifacts") if req.get("max_artifacts") is not None else 10)
        max_bytes = int(req.get("max_artifact_bytes") or (8 << 20))
        out, used = [], 0

        def add(name, data, mime):
            nonlocal used
            used += len(data)
            out.append({"name": name, "mime": mime, "size": len(data),
                        "sha256": hashlib.sha256(data).hexdigest(),
                        "data": base64.b64encode(data).decode("ascii")})

        for i, png in enumerate(figures):
            name = "figure-%d.png" % (i + 1)
            if len(out) >= max_count:
                warnings.append("skipped %s: artifact count limit %d reached" % (name, max_count))
            elif used + len(png) > max_bytes:
                warnings.append("skipped %s: artifact size limit %d bytes reached" % (name, max_bytes))
            else:
                add(name, png, "image/png")
        for dfd, name, rel, st in files.walk(self.work):
            if not (rel.startswith("outputs/") or name.lower().endswith(IMAGE_EXTS)):
                continue
            key = (st.st_mtime_ns, st.st_size)
            if self.reported.get(rel) == key:
                continue
            self.reported[rel] = key
            if len(out) >= max_count:
                warnings.append("skipped %s: artifact count limit %d reached" % (rel, max_count))
                continue
            try:
                data, st2 = files.read_file(dfd, name, max_bytes - used)
            except (OSError, ValueError) as exc:
                warnings.append("skipped %s: %s" % (rel, exc))
                continue
            self.mark(rel, st2)
            add(rel, data, mimetypes.guess_type(name)[0] or "application/octet-stream")
        return out
