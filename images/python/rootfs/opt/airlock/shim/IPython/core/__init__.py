"""Airlock's IPython shim: IPython.core.display only (see IPython/__init__.py)."""
