"""The user cache folder shared by every NanoKnow cache (fetched files, judge verdicts)."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs


def user_cache_dir() -> Path:
    """``$NANOKNOW_CACHE_DIR``, else the platform's user cache folder for ``nanoknow``.

    On Linux that is ``$XDG_CACHE_HOME/nanoknow`` or ``~/.cache/nanoknow`` (platformdirs).
    """
    if os.environ.get("NANOKNOW_CACHE_DIR"):
        return Path(os.environ["NANOKNOW_CACHE_DIR"])
    return Path(platformdirs.user_cache_dir("nanoknow", appauthor=False))
