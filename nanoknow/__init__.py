"""NanoKnow command line, reports, demo and diary commands (the `nanoknow` console script)."""

from importlib.metadata import version as _version

__version__ = _version("nanoknow")
