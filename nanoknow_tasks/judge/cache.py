"""On-disk cache of judge outputs, so that judging the same answers again costs nothing.

One SQLite file (WAL mode, safe for several processes), one row per request, keyed by
:func:`cache_key` of (judge model, prompt, max new tokens). The prompt is stored next to the
output so the file can be inspected. Default location: ``<user cache>/judge/judgements.sqlite``
(see :func:`nanoknow_common.paths.user_cache_dir`).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from contextlib import closing, contextmanager
from pathlib import Path

from nanoknow_common.paths import user_cache_dir


def default_cache_path() -> Path:
    """``<user cache dir>/judge/judgements.sqlite``."""
    return user_cache_dir() / "judge" / "judgements.sqlite"


def cache_key(model: str, messages: list[dict], max_new_tokens: int) -> str:
    """Stable key of one judge request (sha256 of model, prompt and the generation budget)."""
    payload = json.dumps({"model": model, "messages": messages, "max_new_tokens": int(max_new_tokens)},
                         sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


class JudgeCache:
    """Outputs by key in an SQLite file; ``path=None`` keeps them in memory only."""

    def __init__(self, path: str | Path | None):
        self.path = Path(path) if path is not None else None
        self._memory: dict[str, str] = {}
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self._connect() as db:
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("CREATE TABLE IF NOT EXISTS judgements (key TEXT PRIMARY KEY, model TEXT, "
                           "prompt TEXT, output TEXT NOT NULL, created REAL)")

    @contextmanager
    def _connect(self):
        """A connection that commits on success and is always closed."""
        with closing(sqlite3.connect(self.path, timeout=60)) as db, db:
            yield db

    def get_many(self, keys: list[str]) -> dict[str, str]:
        """The cached outputs of those ``keys`` that are present."""
        found = {k: self._memory[k] for k in keys if k in self._memory}
        missing = sorted({k for k in keys if k not in found})
        if self.path is not None and missing:
            with self._connect() as db:
                for i in range(0, len(missing), 500):
                    chunk = missing[i:i + 500]
                    rows = db.execute(f"SELECT key, output FROM judgements WHERE key IN ({','.join('?' * len(chunk))})",
                                      chunk).fetchall()
                    found.update(rows)
        return found

    def put_many(self, rows: list[tuple[str, str, list[dict], str]]) -> None:
        """Store ``(key, model, messages, output)`` rows."""
        for key, _, _, output in rows:
            self._memory[key] = output
        if self.path is not None and rows:
            now = time.time()
            with self._connect() as db:
                db.executemany("INSERT OR REPLACE INTO judgements VALUES (?, ?, ?, ?, ?)",
                               [(k, m, json.dumps(msgs, ensure_ascii=False), out, now)
                                for k, m, msgs, out in rows])
