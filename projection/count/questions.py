"""The questions to count: both splits of NanoKnow datasets, or a ``--questions`` JSONL file."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from projection.data import layout
from nanoknow_common.errors import NanoKnowInputError


@dataclass(frozen=True)
class CountQuestion:
    """One question whose gold answers are counted in the corpus."""

    dataset: str
    qid: str
    answers: tuple[str, ...]


def _qid_order(qid: str):
    return (0, int(qid), "") if qid.isdigit() else (1, 0, qid)


def from_data_dir(data_dir: str | Path | None, datasets: Sequence[str], corpus_dir: str) -> list[CountQuestion]:
    """Both splits of each dataset (topics of ``corpus_dir``), each dataset ordered by qid."""
    from projection.data.data_root import resolve_data_dir
    from projection.data.files import load_questions, read_answers

    root = resolve_data_dir(data_dir)
    out: list[CountQuestion] = []
    for dataset in datasets:
        answers = read_answers(layout.answers_path(root, dataset))
        rows = []
        for split in layout.SPLITS:
            # qrels={}: the counts need no qrels, so their file is not read
            rows += load_questions(root, dataset, corpus_dir, split, answers=answers, qrels={})
        rows.sort(key=lambda q: _qid_order(q.qid))
        out += [CountQuestion(dataset, q.qid, tuple(q.answers)) for q in rows]
    return out


def from_jsonl(path: str | Path, dataset: str) -> list[CountQuestion]:
    """A ``nanoknow project --questions`` file (``qid``, ``question``, ``answer`` per line)."""
    from projection.pipeline import read_questions_jsonl

    return [CountQuestion(dataset, q.qid, tuple(q.answers)) for q in read_questions_jsonl(Path(path))]


def check_unique(questions: Sequence[CountQuestion]) -> None:
    """Refuse the same (dataset, qid) twice (e.g. a dataset named twice)."""
    seen = set()
    for q in questions:
        if (q.dataset, q.qid) in seen:
            raise NanoKnowInputError(f"question {q.qid!r} of {q.dataset!r} appears twice", field="--dataset")
        seen.add((q.dataset, q.qid))


def fingerprint(questions: Sequence[CountQuestion]) -> str:
    """sha256 of every (dataset, qid, answers): a resumed run must count the same questions."""
    digest = hashlib.sha256()
    for q in questions:
        digest.update(json.dumps([q.dataset, q.qid, list(q.answers)], ensure_ascii=False).encode("utf-8"))
        digest.update(b"\n")
    return digest.hexdigest()
