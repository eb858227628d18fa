"""Airlock's IPython shim: not IPython, only what notebooks import from it most
(IPython.display: display, clear_output, HTML, Markdown, Image, JSON, ...), mapped to
Airlock's display() and clear_output() (builtins in every kernel). On a kernel's
sys.path last (/opt/airlock/shim, read-only), so a real IPython installed wins."""

__version__ = "0.0.0+airlock.shim"
version_info = (0, 0, 0, "airlock-shim")


def get_ipython():
    """There is no IPython shell here (code that checks for one takes its plain path)."""
    return None


from . import display  # noqa: E402,F401  (import IPython; IPython.display.HTML(...))
