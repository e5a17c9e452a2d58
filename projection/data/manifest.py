"""The manifest of the upstream NanoKnow files: URLs at a pinned commit, hashes, line counts."""

from __future__ import annotations

import hashlib
import json
import sys
from dataclasses import dataclass
from pathlib import Path

_MANIFEST_NAME = Path("questions-and-qrels") / "manifest.json"


@dataclass(frozen=True)
class ManifestFile:
    """One upstream file: its path under ``questions-and-qrels/`` and what it must hash to."""

    path: str
    git_blob_sha1: str
    sha256: str | None
    lines: int
    bytes: int | None

    @property
    def dataset(self) -> str:
        return self.path.split("/")[0]

    @property
    def corpus_dir(self) -> str | None:
        parts = self.path.split("/")
        return parts[1] if len(parts) == 3 else None

    def digest_matches(self, data: bytes) -> bool:
        """True when ``data`` is this file's content (sha256, else the git blob sha1)."""
        if self.sha256:
            return hashlib.sha256(data).hexdigest() == self.sha256
        return git_blob_sha1(data) == self.git_blob_sha1


@dataclass(frozen=True)
class Manifest:
    commit: str
    base_url: str
    files: tuple[ManifestFile, ...]

    def by_path(self) -> dict[str, ManifestFile]:
        return {f.path: f for f in self.files}


def git_blob_sha1(data: bytes) -> str:
    """The object id git gives ``data`` as a blob (what the pinned commit's tree records)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def manifest_path() -> Path:
    """The manifest in a source checkout, else the copy an installed wheel put under share/."""
    candidates = [Path(__file__).resolve().parents[1] / _MANIFEST_NAME,
                  Path(sys.prefix) / "share" / "nanoknow" / _MANIFEST_NAME]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(f"manifest.json not found in {[str(c) for c in candidates]}")


def load_manifest(path: Path | None = None) -> Manifest:
    """Parse the manifest (default: :func:`manifest_path`)."""
    raw = json.loads(Path(path or manifest_path()).read_text(encoding="utf-8"))
    files = tuple(ManifestFile(path=f["path"], git_blob_sha1=f["git_blob_sha1"], sha256=f.get("sha256"),
                               lines=f["lines"], bytes=f.get("bytes")) for f in raw["files"])
    return Manifest(commit=raw["commit"], base_url=raw["base_url"], files=files)
