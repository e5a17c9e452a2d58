"""NanoKnow command line, reports and demo (the `nanoknow` console script)."""

__version__ = "0.1.0"
