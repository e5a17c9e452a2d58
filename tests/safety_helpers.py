"""Small real inputs for the issue 13 tests: a NanoKnow data root and a parquet corpus."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from projection.data import layout

#: (qid, question, answers, qrels doc ids): two supported questions, one unsupported.
QUESTIONS = [
    ("1", "who built the copper lantern", ["Ada Vell"], ["shard_00000_1"]),
    ("2", "where is the glacier harbor", ["Norrvik"], ["shard_00000_3", "shard_00001_0"]),
    ("3", "what colour is the violin meadow", ["amber"], []),
]


def write_corpus(folder: Path, marker: str = "") -> Path:
    """Two shards; the supported questions' documents hold their answers. ``marker`` is put in
    every text so that two corpora can be told apart."""
    folder.mkdir(parents=True, exist_ok=True)
    shard0 = [f"{marker} filler text about rivers {i}" for i in range(6)]
    shard0[1] = f"{marker} The copper lantern was built by Ada Vell in a small workshop."
    shard0[3] = f"{marker} The glacier harbor lies in Norrvik, far in the north."
    shard1 = [f"{marker} Norrvik has a glacier harbor and a fish market.", f"{marker} orbit castle apple"]
    pq.write_table(pa.table({"text": shard0}), folder / "shard_00000.parquet")
    pq.write_table(pa.table({"text": shard1}), folder / "shard_00001.parquet")
    return folder


def write_root(root: Path, *, dataset: str = "nq", corpus_dir: str = "sample", questions=QUESTIONS) -> Path:
    """Answers, both topics splits and qrels of ``questions`` in the upstream layout."""
    (root / dataset / corpus_dir).mkdir(parents=True, exist_ok=True)
    layout.answers_path(root, dataset).write_text(
        "".join(json.dumps({"qid": q, "answer": a}) + "\n" for q, _, a, _ in questions), encoding="utf-8")
    for split in layout.SPLITS:
        layout.topics_path(root, dataset, corpus_dir, split).write_text(
            "".join(f"{q}\t{text}\n" for q, text, _, docs in questions if bool(docs) == (split == "supported")),
            encoding="utf-8")
    layout.qrels_path(root, dataset, corpus_dir).write_text(
        "".join(f"{q} Q0 {d} 1\n" for q, _, _, docs in questions for d in docs), encoding="utf-8")
    return root


def one_line_error(stderr: str) -> str:
    """The CLI's error line; asserts there is exactly one and no traceback (log lines and
    progress bars may surround it)."""
    assert "Traceback" not in stderr, stderr
    lines = [line for line in stderr.replace("\r", "\n").splitlines() if ": error: " in line]
    assert len(lines) == 1, stderr
    return lines[0]
