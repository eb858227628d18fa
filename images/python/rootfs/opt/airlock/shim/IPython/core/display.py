"""IPython.core.display of Airlock's shim: the same names as IPython.display."""

from IPython.display import *  # noqa: F401,F403
from IPython.display import __all__  # noqa: F401
