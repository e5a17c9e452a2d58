"""The on-disk layout written by ``nanoknow diary make`` and its validating readers.

::

    DIR/manifest.json                 format, version, seed, diarists, counts, file lists
    DIR/qa/{train,validation,test}.jsonl   one Q/A record per diarist (see Diarist.qa_row)
    DIR/entries.parquet               every entry with its diarist, index and split
    DIR/documents/shard_XXXXX.parquet training documents: one per entry + training Q/A
    DIR/simplified/shard_XXXXX.parquet the "simplified" variant: one merged document per diarist + training Q/A

Document shards follow the corpus layout of DESIGN.md (a ``text`` column, doc id
``shard_<5 digits>_<row>``) with extra columns ``kind`` (entry/merged/qa), ``diarist_id``
and ``entry``, so they can be mixed into nanochat training data or indexed as a corpus.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from nanoknow_common.errors import NanoKnowInputError

from projection.diary.generator import SPLITS, DiarySet

log = logging.getLogger(__name__)

FORMAT = "nanoknow-diary"
VERSION = 1
MANIFEST = "manifest.json"
ENTRIES = "entries.parquet"
VARIANT_FOLDERS = {"standard": "documents", "simplified": "simplified"}
QA_FIELDS = ("qid", "diarist_id", "name", "split", "question", "answer", "num_entries", "entry_lengths")
DEFAULT_ROWS_PER_SHARD = 100_000


def qa_path(folder: Path, split: str) -> Path:
    return Path(folder) / "qa" / f"{split}.jsonl"


def _write_parquet(rows: list[dict], path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(rows), path)


def _write_shards(docs: list[dict], folder: Path, rows_per_shard: int) -> list[str]:
    folder.mkdir(parents=True, exist_ok=True)
    for stale in folder.glob("shard_*.parquet"):  # a previous, larger run must not leave shards behind
        stale.unlink()
    names = []
    for number, start in enumerate(range(0, len(docs), rows_per_shard)):
        name = f"shard_{number:05d}.parquet"
        _write_parquet(docs[start:start + rows_per_shard], folder / name)
        names.append(f"{folder.name}/{name}")
    return names


def write_diary_set(diary: DiarySet, out: str | Path, *, rows_per_shard: int = DEFAULT_ROWS_PER_SHARD) -> Path:
    """Write ``diary`` in the layout above; return the manifest path. Same set -> same bytes."""
    out = Path(out)
    (out / "qa").mkdir(parents=True, exist_ok=True)
    counts = {"diarists": diary.num_diarists, "entries": diary.num_entries}
    for split in SPLITS:
        rows = [d.qa_row() for d in diary.split(split)]
        with open(qa_path(out, split), "w", encoding="utf-8") as f:
            for row in rows:
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
        counts[f"{split}_questions"] = len(rows)
    entries = [{"diarist_id": d.diarist_id, "name": d.name, "split": d.split, "entry": i + 1,
                "num_attributes": len(d.entries[i]), "text": text}
               for d in diary.diarists for i, text in enumerate(d.entry_texts)]
    _write_parquet(entries, out / ENTRIES)
    files = {"qa": [f"qa/{s}.jsonl" for s in SPLITS], "entries": ENTRIES}
    for variant, folder in VARIANT_FOLDERS.items():
        docs = diary.documents(variant)
        files[variant] = _write_shards(docs, out / folder, rows_per_shard)
        counts[f"{variant}_documents"] = len(docs)
    manifest = {"format": FORMAT, "version": VERSION, "seed": diary.seed,
                "diarists": diary.num_diarists, "counts": counts, "files": files}
    path = out / MANIFEST
    path.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    log.info("diary set of %d diarists (%d entries) written to %s", diary.num_diarists, diary.num_entries, out)
    return path


def read_manifest(folder: str | Path) -> dict:
    """The manifest of a ``diary make`` folder, checked; input errors name the file and field."""
    path = Path(folder) / MANIFEST
    if not Path(folder).is_dir():
        raise NanoKnowInputError("no such diary folder (make one with `nanoknow diary make`)", file=folder)
    if not path.is_file():
        raise NanoKnowInputError("missing: not a `nanoknow diary make` folder", file=path)
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise NanoKnowInputError(f"not valid JSON: {err}", file=path) from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise NanoKnowInputError(f"expected {FORMAT!r}", file=path, field="format")
    if manifest.get("version") != VERSION:
        raise NanoKnowInputError(f"unsupported version {manifest.get('version')!r}, expected {VERSION}",
                                 file=path, field="version")
    for field in ("seed", "diarists"):
        if not isinstance(manifest.get(field), int) or isinstance(manifest.get(field), bool):
            raise NanoKnowInputError("must be an integer", file=path, field=field)
    return manifest


def read_qa_split(folder: str | Path, split: str) -> list[dict]:
    """The Q/A records of one split of a ``diary make`` folder, each field checked."""
    if split not in SPLITS:
        raise NanoKnowInputError(f"unknown split {split!r}; expected one of {SPLITS}", field="split")
    path = qa_path(Path(folder), split)
    if not path.is_file():
        raise NanoKnowInputError("missing Q/A split file", file=path)
    rows = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as err:
                raise NanoKnowInputError(f"not valid JSON: {err.msg}", file=path, line=number) from None
            if not isinstance(row, dict):
                raise NanoKnowInputError("expected a JSON object", file=path, line=number)
            for field in QA_FIELDS:
                if field not in row:
                    raise NanoKnowInputError("missing", file=path, line=number, field=field)
            for field in ("question", "answer", "name", "qid"):
                if not isinstance(row[field], str):
                    raise NanoKnowInputError("must be a string", file=path, line=number, field=field)
            if row["split"] != split:
                raise NanoKnowInputError(f"is {row['split']!r} in the {split} file", file=path,
                                         line=number, field="split")
            rows.append({field: row[field] for field in QA_FIELDS})
    return rows
