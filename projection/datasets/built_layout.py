"""The built NanoKnow datasets: one schema, one folder layout, one reader for every consumer.

``nanoknow build`` writes, per source dataset and corpus::

    <build_dir>/<dataset>/<corpus_dir>/supported.parquet
    <build_dir>/<dataset>/<corpus_dir>/unsupported.parquet
    <build_dir>/<dataset>/<corpus_dir>/build_info.json     (provenance and counts)

``nanoknow publish`` turns a build folder into the Hugging Face Hub layout, one config per
``<dataset>-<corpus slug>`` (e.g. ``nq-fineweb``) with the splits ``supported`` and
``unsupported``. The lm-eval tasks read either, or a Hub repository.
"""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from projection.data import layout
from nanoknow_common.errors import NanoKnowInputError

DATASET_DIR_ENV = "NANOKNOW_DATASET_DIR"
BUILD_INFO = "build_info.json"

PASSAGE = pa.struct([("doc_id", pa.string()), ("passage", pa.string())])
ORACLE = pa.struct([
    ("doc_id", pa.string()),
    ("passage", pa.string()),
    ("answer", pa.string()),          # the gold answer that matched first
    ("answer_offset", pa.int64()),    # character offset of the match in the whole document
    ("passage_offset", pa.int64()),   # character offset of the match inside ``passage``
    ("grid_passage", pa.string()),    # the shorter window (``grid_words``) around the same match
    ("grid_passage_offset", pa.int64()),  # character offset of the match inside ``grid_passage``
])
ANSWER_DOCS = pa.struct([("substring", pa.int32()), ("token", pa.int32())])
SCHEMA = pa.schema([
    ("qid", pa.string()),
    ("question", pa.string()),
    ("answers", pa.list_(pa.string())),
    ("answer_frequency", pa.int32()),       # qrels documents (0 unsupported; null if unknown)
    ("split", pa.string()),
    ("oracle", ORACLE),                     # null for unsupported rows and unanswerable ones
    ("distractors", pa.list_(PASSAGE)),     # no gold answer: BM25 hard negatives, best first (random without an index)
    ("random_distractors", pa.list_(PASSAGE)),  # no gold answer: seeded random documents
    ("original_context", pa.string()),      # SQuAD's own paragraph; null for other datasets
    ("qrels_shards", pa.list_(pa.int32())),  # shard of each qrels document, file order (exposure)
    # documents of the whole corpus holding a gold answer (``nanoknow count``; null without counts):
    # the stage-1 rule (substring) and the has_answer token rule (token); not capped by BM25's top-k
    ("corpus_answer_docs", ANSWER_DOCS),
])


def config_name(dataset: str, corpus_dir: str) -> str:
    """Hub config name of one dataset/corpus, e.g. ``nq-fineweb``."""
    return f"{dataset}-{layout.corpus_slug(corpus_dir)}"


def split_path(build_dir: Path, dataset: str, corpus_dir: str, split: str) -> Path:
    """``<build_dir>/<dataset>/<corpus_dir>/<split>.parquet``."""
    if split not in layout.SPLITS:
        raise ValueError(f"split must be one of {layout.SPLITS}, got {split!r}")
    return Path(build_dir) / dataset / corpus_dir / f"{split}.parquet"


def info_path(build_dir: Path, dataset: str, corpus_dir: str) -> Path:
    return Path(build_dir) / dataset / corpus_dir / BUILD_INFO


def write_split(table: pa.Table, path: Path) -> None:
    """Write one split deterministically (same rows -> same bytes) and atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    from nanoknow_common.file_io import naming_path

    tmp = path.with_name(f".{path.name}.tmp")
    with naming_path(path):  # a failed write (disk full) names the file
        pq.write_table(table.cast(SCHEMA), tmp, compression="zstd", write_statistics=True,
                       use_dictionary=True, store_schema=True)
    os.replace(tmp, path)


def read_split(build_dir: Path, dataset: str, corpus_dir: str, split: str) -> pa.Table:
    """One built split; raises with the path when it is missing."""
    path = split_path(build_dir, dataset, corpus_dir, split)
    if not path.is_file():
        raise NanoKnowInputError(f"built split not found: {path} (run `nanoknow build`)", file=path)
    try:
        return pq.read_table(path)
    except (pa.ArrowInvalid, OSError) as err:  # truncated or corrupt: name the file, no traceback
        raise NanoKnowInputError(f"not a readable parquet file ({str(err).splitlines()[0]})", file=path) from err


def read_info(build_dir: Path, dataset: str, corpus_dir: str) -> dict:
    """``build_info.json`` of one build ({} when absent); raises naming the file when it is not a JSON object."""
    from nanoknow_common.file_io import read_json

    path = info_path(build_dir, dataset, corpus_dir)
    if not path.is_file():
        return {}
    info = read_json(path, what="build_info.json")
    if not isinstance(info, dict):
        raise NanoKnowInputError("build_info.json must hold a JSON object", file=path)
    return info


def discover_builds(build_dir: Path) -> list[tuple[str, str]]:
    """All ``(dataset, corpus_dir)`` with at least one built split under ``build_dir``."""
    found = {(p.parent.parent.name, p.parent.name) for s in layout.SPLITS
             for p in Path(build_dir).glob(f"*/*/{s}.parquet")}
    return sorted(found)
