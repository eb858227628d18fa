"""IPython.display of Airlock's shim: display() and clear_output() are Airlock's (the
kernel's builtins), and the display classes are small objects whose _repr_*_ methods give
the mime bundle a notebook shows (text/html, text/markdown, image/png, ...)."""

import base64
import builtins
import json as _json
import os

__all__ = ["display", "clear_output", "update_display", "DisplayHandle", "DisplayObject", "HTML", "Markdown",
           "Latex", "Math", "SVG", "Javascript", "JSON", "Image", "Pretty", "Code", "display_html",
           "display_markdown", "display_latex", "display_svg", "display_png", "display_jpeg", "display_json",
           "display_javascript", "display_pretty"]


class _Raw:
    """A mime bundle given as such (display(..., raw=True))."""

    def __init__(self, bundle):
        self.bundle = bundle

    def __repr__(self):
        return str(self.bundle.get("text/plain", ""))

    def _repr_mimebundle_(self, include=None, exclude=None):
        return self.bundle


class DisplayHandle:
    """What display(..., display_id=...) returns; updates are shown as new displays."""

    def __init__(self, display_id=None):
        self.display_id = display_id

    def display(self, obj, **kwargs):
        display(obj, **kwargs)

    def update(self, obj, **kwargs):
        display(obj, **kwargs)


def display(*objs, include=None, exclude=None, metadata=None, transient=None, display_id=None, raw=False,
            clear=False, **kwargs):
    """Show objects as rich output (Airlock's display(); raw: each object is a mime bundle)."""
    if clear:
        clear_output(wait=True)
    for obj in objs:
        if raw and isinstance(obj, dict):
            obj = _Raw(obj)
        builtins.display(obj)
    if display_id:
        return DisplayHandle(None if display_id is True else display_id)
    return None


def update_display(obj, *, display_id=None, **kwargs):
    """Shown as a new display (Airlock does not replace an earlier one)."""
    display(obj, **kwargs)


def clear_output(wait=False):
    """Clear the cell's output so far (Airlock's clear_output())."""
    builtins.clear_output(wait)


class DisplayObject:
    """Data shown by a notebook as one mime type (data, a file's contents, or a url)."""

    def __init__(self, data=None, url=None, filename=None, metadata=None):
        if isinstance(data, str) and filename is None and url is None:
            if data.startswith(("http://", "https://")):
                url, data = data, None
            elif len(data) < 4096 and "\n" not in data and os.path.isfile(data):
                filename, data = data, None
        self.url = url
        self.filename = filename
        self.metadata = metadata or {}
        if data is None and filename is not None:
            with open(filename, "rb" if getattr(self, "_binary", False) else "r") as f:
                data = f.read()
        self.data = data

    def __repr__(self):
        return "<IPython.core.display.%s object>" % type(self).__name__

    def _text(self):
        if isinstance(self.data, bytes):
            return self.data.decode("utf-8", "replace")
        return "" if self.data is None else str(self.data)


class HTML(DisplayObject):
    """text/html."""

    def _repr_html_(self):
        if self.data is None and self.url:
            return '<iframe src="%s"></iframe>' % self.url
        return self._text()

    def __html__(self):
        return self._repr_html_()


class Markdown(DisplayObject):
    """text/markdown."""

    def _repr_markdown_(self):
        return self._text()


class Latex(DisplayObject):
    """text/latex."""

    def _repr_latex_(self):
        return self._text()


class Math(DisplayObject):
    """text/latex, between $$ (a formula)."""

    def _repr_latex_(self):
        s = self._text().strip()
        return s if s.startswith("$") else "$$%s$$" % s


class SVG(DisplayObject):
    """image/svg+xml."""

    def _repr_svg_(self):
        return self._text()


class Pretty(DisplayObject):
    """text/plain."""

    def __repr__(self):
        return self._text()


class Code(DisplayObject):
    """Source code (text/plain)."""

    def __init__(self, data=None, url=None, filename=None, language=None):
        super().__init__(data, url, filename)
        self.language = language

    def __repr__(self):
        return self._text()


class Javascript(DisplayObject):
    """application/javascript."""

    def __init__(self, data=None, url=None, filename=None, lib=None, css=None):
        super().__init__(data, url, filename)

    def _repr_mimebundle_(self, include=None, exclude=None):
        return {"application/javascript": self._text()}


class JSON(DisplayObject):
    """application/json (the value as JSON text: Airlock's bundles hold strings)."""

    def __init__(self, data=None, url=None, filename=None, expanded=False, metadata=None, root="root", **kwargs):
        if isinstance(data, str) and filename is None and url is None and not os.path.isfile(data):
            data = _json.loads(data)
        super().__init__(data if data is not None else None, url, filename, metadata)
        if isinstance(self.data, (str, bytes)) and filename is not None:
            self.data = _json.loads(self.data)

    def _repr_mimebundle_(self, include=None, exclude=None):
        return {"application/json": _json.dumps(self.data)}


class Image(DisplayObject):
    """image/png or image/jpeg (bytes, a file or a url; a url alone is shown as <img>)."""

    _binary = True

    def __init__(self, data=None, url=None, filename=None, format=None, embed=None, width=None, height=None,
                 retina=False, unconfined=False, metadata=None, alt=None):
        if isinstance(data, bytes):
            super().__init__(None, url, filename, metadata)
            self.data = data
        else:
            super().__init__(data, url, filename, metadata)
        if isinstance(self.data, str):
            self.data = self.data.encode("latin-1")
        self.format = (format or self._guess()).lower().replace("jpg", "jpeg")
        self.width, self.height, self.alt = width, height, alt

    def _guess(self):
        if isinstance(self.data, bytes):
            if self.data[:8] == b"\x89PNG\r\n\x1a\n":
                return "png"
            if self.data[:3] == b"\xff\xd8\xff":
                return "jpeg"
        name = (self.filename or self.url or "").lower()
        return "jpeg" if name.endswith((".jpg", ".jpeg")) else "png"

    def _repr_png_(self):
        return self.data if self.data is not None and self.format == "png" else None

    def _repr_jpeg_(self):
        return self.data if self.data is not None and self.format == "jpeg" else None

    def _repr_html_(self):
        if self.data is not None:
            return None
        size = "".join(' %s="%s"' % (k, v) for k, v in (("width", self.width), ("height", self.height)) if v)
        return '<img src="%s"%s/>' % (self.url, size)

    def _repr_mimebundle_(self, include=None, exclude=None):
        if self.data is None or self.format in ("png", "jpeg"):
            return None  # the _repr_*_ methods above
        return {"image/%s" % self.format: base64.b64encode(self.data).decode("ascii")}


def _shows(cls):
    def show(*objs, raw=False, **kwargs):
        for obj in objs:
            display(obj if raw is False and not isinstance(obj, (str, bytes)) else cls(obj), **kwargs)
    return show


display_html, display_markdown, display_latex = _shows(HTML), _shows(Markdown), _shows(Latex)
display_svg, display_png, display_jpeg = _shows(SVG), _shows(Image), _shows(Image)
display_json, display_javascript, display_pretty = _shows(JSON), _shows(Javascript), _shows(Pretty)
