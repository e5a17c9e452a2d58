"""Scratch folders owned by one process, recognised and removed by the next run if it died.

A long command (``nanoknow index``, ``nanoknow publish``) works in a hidden sibling folder of
its output, ``<parent>/<prefix><pid>-<random>/``, holding an ``owner.json`` (process id and
start time). The folder is removed on every exit Python sees (``finally``; SIGTERM/SIGINT are
turned into an exception by the CLI). A process killed outright (SIGKILL, power loss) leaves
it behind: the next run with the same prefix removes every such folder whose owner process
is gone. Folders without ``owner.json``, or whose owner still runs, are never touched.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
from pathlib import Path

import psutil

log = logging.getLogger(__name__)

OWNER = "owner.json"


def _started(pid: int) -> float | None:
    try:
        return psutil.Process(pid).create_time()
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return None


def _owner_alive(folder: Path) -> bool:
    try:
        owner = json.loads((folder / OWNER).read_text(encoding="utf-8"))
        pid, started = int(owner["pid"]), float(owner["started"])
    except (OSError, ValueError, KeyError, TypeError):
        return True  # not a readable owner file: not recognisably ours, leave it
    now = _started(pid)
    return now is not None and abs(now - started) < 1.0  # same pid, same process (not a reused pid)


def remove_stale(parent: Path, prefix: str) -> list[Path]:
    """Remove ``<parent>/<prefix>*`` scratch folders whose owner process is gone; return them."""
    removed = []
    if not Path(parent).is_dir():
        return removed
    for child in Path(parent).iterdir():
        if child.name.startswith(prefix) and child.is_dir() and not child.is_symlink() \
                and (child / OWNER).is_file() and not _owner_alive(child):
            log.info("removing %s, left behind by an interrupted run", child)
            shutil.rmtree(child, ignore_errors=True)
            removed.append(child)
    return removed


class ScratchDir:
    """``with ScratchDir(parent, prefix) as path:`` a fresh owned folder, removed on exit."""

    def __init__(self, parent: Path, prefix: str):
        self.parent = Path(parent)
        self.prefix = prefix
        self.path: Path | None = None

    def __enter__(self) -> Path:
        remove_stale(self.parent, self.prefix)
        self.parent.mkdir(parents=True, exist_ok=True)
        self.path = Path(tempfile.mkdtemp(prefix=f"{self.prefix}{os.getpid()}-", dir=self.parent))
        try:
            (self.path / OWNER).write_text(json.dumps({"pid": os.getpid(), "started": _started(os.getpid())})
                                           + "\n", encoding="utf-8")
        except BaseException:  # a signal or a full disk right here: leave no folder nobody would own
            shutil.rmtree(self.path, ignore_errors=True)
            raise
        return self.path

    def __exit__(self, *exc) -> None:
        if self.path is not None:
            shutil.rmtree(self.path, ignore_errors=True)
