"""The files of a count run, and :func:`read_counts` for the commands that use them.

``<out>/`` holds:

* ``run.json``: the parameters (a resume with others is refused);
* ``shards/shard_XXXXX.json``: one per finished shard, written atomically when the shard is
  done: ``{"shard": 7, "documents": n, "counts": {dataset: {qid: [substring, token]}}}``
  with only non-zero pairs;
* ``counts.jsonl``: when every shard is done, one line per question (zeros included)::

      {"dataset": "nq", "qid": "17", "corpus_answer_docs": {"substring": 12, "token": 9},
       "shards": {"00000": [3, 2], "00004": [9, 7]}}

  ``shards`` lists only shards with a non-zero pair, so the documents a checkpoint read are
  the sum over the shards it saw.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from nanoknow_common.file_io import json_object_lines
from projection.count.matcher import RULES
from projection.count.questions import CountQuestion
from nanoknow_common.errors import NanoKnowInputError

RUN_FILE = "run.json"
COUNTS_FILE = "counts.jsonl"
SHARDS_DIR = "shards"


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to a temporary file next to ``path`` and rename it into place."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def shard_result_path(out: Path, shard: int) -> Path:
    return Path(out) / SHARDS_DIR / f"shard_{shard:05d}.json"


def write_shard_result(out: Path, shard: int, documents: int, questions: Sequence[CountQuestion],
                       substring: np.ndarray, token: np.ndarray) -> None:
    """Write one finished shard's non-zero counts (atomically)."""
    counts: dict[str, dict[str, list[int]]] = {}
    for i in np.flatnonzero((substring > 0) | (token > 0)).tolist():
        q = questions[i]
        counts.setdefault(q.dataset, {})[q.qid] = [int(substring[i]), int(token[i])]
    path = shard_result_path(out, shard)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps({"shard": shard, "documents": int(documents), "counts": counts},
                                  ensure_ascii=False, sort_keys=True) + "\n")


def read_shard_result(path: Path) -> dict:
    """A shard result file, checked."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as err:
        raise NanoKnowInputError(f"unreadable shard result ({err}); delete it to count the shard again",
                                 file=path) from err
    if not (isinstance(data, dict) and isinstance(data.get("shard"), int)
            and isinstance(data.get("documents"), int) and isinstance(data.get("counts"), dict)):
        raise NanoKnowInputError("not a shard result of nanoknow count; delete it to count the shard again",
                                 file=path)
    return data


def write_counts(out: Path, questions: Sequence[CountQuestion], shard_results: dict[int, dict]) -> dict:
    """Merge the shard results into ``counts.jsonl`` (atomically); return totals per rule."""
    per_question: dict[tuple[str, str], dict[str, list[int]]] = {}
    for shard in sorted(shard_results):
        for dataset, rows in shard_results[shard]["counts"].items():
            for qid, pair in rows.items():
                per_question.setdefault((dataset, qid), {})[f"{shard:05d}"] = [int(pair[0]), int(pair[1])]
    lines = []
    with_docs = dict.fromkeys(RULES, 0)
    for q in questions:
        shards = per_question.get((q.dataset, q.qid), {})
        totals = {rule: sum(pair[k] for pair in shards.values()) for k, rule in enumerate(RULES)}
        for rule in RULES:
            with_docs[rule] += totals[rule] > 0
        lines.append(json.dumps({"dataset": q.dataset, "qid": q.qid, "corpus_answer_docs": totals,
                                 "shards": shards}, ensure_ascii=False) + "\n")
    write_atomic(Path(out) / COUNTS_FILE, "".join(lines))
    return with_docs


@dataclass(frozen=True)
class AnswerDocs:
    """Whole-corpus answer counts of one question."""

    substring: int
    token: int
    #: shard number -> (substring, token) documents in that shard (non-zero shards only)
    shards: dict[int, tuple[int, int]]

    def in_shards(self, shards) -> tuple[int, int]:
        """Documents among ``shards`` (e.g. those a checkpoint read): ``(substring, token)``."""
        wanted = set(shards)
        pairs = [pair for shard, pair in self.shards.items() if shard in wanted]
        return sum(p[0] for p in pairs), sum(p[1] for p in pairs)


def read_counts(path: str | Path, dataset: str | None = None) -> dict[str, AnswerDocs]:
    """``counts.jsonl`` (or the run folder holding it) -> ``{qid: AnswerDocs}``.

    A file with several datasets needs ``dataset``. Raises :class:`NanoKnowInputError`
    naming the file, line and field of a bad line.
    """
    path = Path(path)
    if path.is_dir():
        path = path / COUNTS_FILE
    if not path.is_file():
        raise NanoKnowInputError("answer counts file not found (made by nanoknow count)", file=path)
    found: dict[str, dict[str, AnswerDocs]] = {}
    for number, row in json_object_lines(path):
        where = dict(file=path, line=number)
        for name in ("dataset", "qid"):
            if not isinstance(row.get(name), str) or not row[name]:
                raise NanoKnowInputError("missing or not a string", field=name, **where)
        totals = row.get("corpus_answer_docs")
        if not isinstance(totals, dict) or not all(_count(totals.get(rule)) for rule in RULES):
            raise NanoKnowInputError('expected {"substring": n, "token": n}', field="corpus_answer_docs",
                                     **where)
        shards = row.get("shards", {})
        if not isinstance(shards, dict) or not all(
                k.isascii() and k.isdigit() and isinstance(v, list) and len(v) == 2 and all(map(_count, v))
                for k, v in shards.items()):
            raise NanoKnowInputError('expected {"00000": [substring, token], ...}', field="shards", **where)
        rows = found.setdefault(row["dataset"], {})
        if row["qid"] in rows:
            raise NanoKnowInputError(f"duplicate qid {row['qid']!r}", field="qid", **where)
        rows[row["qid"]] = AnswerDocs(totals["substring"], totals["token"],
                                      {int(k): (v[0], v[1]) for k, v in shards.items()})
    if dataset is not None:
        if dataset not in found:
            raise NanoKnowInputError(f"no counts for dataset {dataset!r} (has: {', '.join(sorted(found)) or 'none'})",
                                     file=path, field="dataset")
        return found[dataset]
    if len(found) > 1:
        raise NanoKnowInputError(f"counts of several datasets ({', '.join(sorted(found))}): name one",
                                 file=path, field="dataset")
    return next(iter(found.values()), {})


def _count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0
