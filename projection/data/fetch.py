"""``nanoknow data fetch``: download the upstream files listed in the manifest, checked and atomic.

A file is written to a temporary name beside its destination and moved into place only when
its hash and line count match the manifest, so a failed or corrupted download never leaves a
half-written file. Files already present with the right content are not downloaded again.
"""

from __future__ import annotations

import logging
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import requests
from tqdm import tqdm

from nanoknow_common.errors import NanoKnowInputError
from projection.data.manifest import Manifest, ManifestFile, load_manifest

log = logging.getLogger(__name__)



@dataclass(frozen=True)
class FetchOutcome:
    path: str
    status: str  # "present", "downloaded" or "failed"
    reason: str = ""


def select_files(manifest: Manifest, datasets: list[str] | None, corpora: list[str] | None) -> list[ManifestFile]:
    """Manifest entries of the wanted datasets/corpora (answers files follow their dataset)."""
    chosen = []
    for entry in manifest.files:
        if datasets and entry.dataset not in datasets:
            continue
        if corpora and entry.corpus_dir is not None and entry.corpus_dir not in corpora:
            continue
        chosen.append(entry)
    return chosen


def _check(entry: ManifestFile, data: bytes) -> str:
    """Empty string when ``data`` is the expected content, else the reason it is not."""
    if not entry.digest_matches(data):
        kind = "sha256" if entry.sha256 else "git blob sha1"
        return f"{kind} mismatch"
    lines = data.count(b"\n")
    if lines != entry.lines:
        return f"{lines} lines, expected {entry.lines}"
    return ""


def _write_atomically(target: Path, data: bytes) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
    try:
        with os.fdopen(handle, "wb") as tmp:
            tmp.write(data)
            tmp.flush()
            os.fsync(tmp.fileno())
        os.replace(tmp_name, target)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise


def fetch_file(entry: ManifestFile, dest: Path, base_url: str, *, session: requests.Session,
               timeout: float = 60.0) -> FetchOutcome:
    """Make ``dest/entry.path`` hold the pinned content; never leaves a partial file."""
    target = dest / entry.path
    if target.is_file() and not _check(entry, target.read_bytes()):
        return FetchOutcome(entry.path, "present")
    url = base_url.rstrip("/") + "/" + entry.path
    try:
        response = session.get(url, timeout=timeout)
        response.raise_for_status()
        data = response.content
    except requests.RequestException as err:
        return FetchOutcome(entry.path, "failed", f"{url}: {err.__class__.__name__}: {err}")
    problem = _check(entry, data)
    if problem:
        return FetchOutcome(entry.path, "failed", f"{url}: {problem}; nothing written")
    _write_atomically(target, data)
    return FetchOutcome(entry.path, "downloaded")


def fetch(dest: Path, *, manifest: Manifest | None = None, base_url: str | None = None,
          datasets: list[str] | None = None, corpora: list[str] | None = None,
          timeout: float = 60.0) -> list[FetchOutcome]:
    """Fetch the selected manifest files into ``dest``; returns one outcome per file."""
    manifest = manifest or load_manifest()
    entries = select_files(manifest, datasets, corpora)
    if not entries:
        raise NanoKnowInputError(f"no manifest file matches datasets={datasets} corpora={corpora}")
    outcomes = []
    with requests.Session() as session:
        for entry in tqdm(entries, desc="nanoknow data fetch", unit="file"):
            outcome = fetch_file(entry, Path(dest), base_url or manifest.base_url,
                                 session=session, timeout=timeout)
            log.info("%s: %s %s", entry.path, outcome.status, outcome.reason)
            outcomes.append(outcome)
    return outcomes






