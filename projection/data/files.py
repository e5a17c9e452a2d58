"""Read and validate the NanoKnow question, answer and qrels files (upstream layout).

Each reader takes an optional ``problems`` list: given one, it records every bad line as a
:class:`~nanoknow_common.errors.NanoKnowInputError` and goes on (what ``nanoknow data verify``
wants); without it, the first bad line raises (what a task loader wants).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from projection.data import layout
from projection.corpus.shards import DOC_ID_RE, canonical_doc_id
from nanoknow_common.errors import NanoKnowInputError
from nanoknow_common.file_io import text_lines

_RELEVANCE = re.compile(r"-?[0-9]+")  # ASCII digits: int() would also take other scripts' digits


def _report(problems: list | None, error: NanoKnowInputError) -> None:
    if problems is None:
        raise error
    problems.append(error)


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    if not path.is_file():
        raise NanoKnowInputError("file not found" if not path.exists() else "not a file", file=path)
    yield from text_lines(path)  # bytes that are not UTF-8: an error naming the file and line


def read_answers(path: Path, problems: list | None = None) -> dict[str, list[str]]:
    """``{"qid": "0", "answer": ["...", ...]}`` per line -> ``{qid: answers}``."""
    answers: dict[str, list[str]] = {}
    for number, line in _lines(Path(path)):
        where = dict(file=path, line=number)
        if not line.strip():
            _report(problems, NanoKnowInputError("empty line", **where))
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as err:
            _report(problems, NanoKnowInputError(f"not valid JSON ({err.msg})", **where))
            continue
        if not isinstance(record, dict):
            _report(problems, NanoKnowInputError("expected a JSON object", **where))
            continue
        qid = record.get("qid")
        if isinstance(qid, int) and not isinstance(qid, bool):
            qid = str(qid)
        if not isinstance(qid, str) or not qid:
            _report(problems, NanoKnowInputError("missing or empty qid", field="qid", **where))
            continue
        values = record.get("answer")
        if not isinstance(values, list) or not values or not all(isinstance(a, str) for a in values):
            _report(problems, NanoKnowInputError("expected a non-empty list of strings",
                                                 field="answer", **where))
            continue
        if qid in answers:
            _report(problems, NanoKnowInputError(f"duplicate qid {qid!r}", field="qid", **where))
            continue
        answers[qid] = values
    return answers


def read_topics(path: Path, problems: list | None = None) -> dict[str, str]:
    """``qid<TAB>question`` per line -> ``{qid: question}`` in file order."""
    topics: dict[str, str] = {}
    for number, line in _lines(Path(path)):
        where = dict(file=path, line=number)
        fields = line.split("\t")
        if len(fields) != 2:
            _report(problems, NanoKnowInputError(
                f"expected 2 tab-separated fields (qid, question), got {len(fields)}", **where))
            continue
        qid, question = fields
        if not qid.strip():
            _report(problems, NanoKnowInputError("empty qid", field="qid", **where))
            continue
        if not question.strip():
            _report(problems, NanoKnowInputError("empty question", field="question", **where))
            continue
        if qid in topics:
            what = "duplicate line" if topics[qid] == question else f"duplicate qid {qid!r}"
            _report(problems, NanoKnowInputError(what, field="qid", **where))
            continue
        topics[qid] = question
    return topics


def read_qrels(path: Path, problems: list | None = None) -> dict[str, list[str]]:
    """TREC qrels ``qid Q0 doc_id rel`` -> ``{qid: [doc_id, ...]}`` in file order (rel > 0 only)."""
    qrels: dict[str, list[str]] = {}
    seen: set[tuple[str, str]] = set()
    for number, line in _lines(Path(path)):
        where = dict(file=path, line=number)
        fields = line.split()
        if len(fields) != 4:
            _report(problems, NanoKnowInputError(
                f"expected 4 fields (qid Q0 doc_id relevance), got {len(fields)}", **where))
            continue
        qid, q0, doc_id, relevance = fields
        if q0 != "Q0":
            _report(problems, NanoKnowInputError(f"expected 'Q0', got {q0!r}", field="Q0", **where))
            continue
        if not DOC_ID_RE.match(doc_id):
            _report(problems, NanoKnowInputError(
                f"{doc_id!r} is not shard_<5 digits>_<row>", field="doc_id", **where))
            continue
        if not _RELEVANCE.fullmatch(relevance):
            _report(problems, NanoKnowInputError(
                f"relevance {relevance!r} is not an integer", field="relevance", **where))
            continue
        canonical = canonical_doc_id(doc_id)  # shard_01177_050695 is shard_01177_50695
        if (qid, canonical) in seen:
            same = "" if canonical == doc_id else f" (the same document as {canonical})"
            _report(problems, NanoKnowInputError(f"duplicate line for ({qid}, {doc_id}){same}",
                                                 field="doc_id", **where))
            continue
        seen.add((qid, canonical))
        if int(relevance) > 0:
            qrels.setdefault(qid, []).append(doc_id)
    return qrels


@dataclass(frozen=True)
class Question:
    """One question: id, text and gold answers; questions read from a NanoKnow data folder
    also carry their split and answer frequency."""

    qid: str
    question: str
    answers: list[str]
    split: str | None = None
    #: qrels documents of this question (0 for unsupported); None where qrels are absent.
    answer_frequency: int | None = None


def load_questions(root: Path, dataset: str, corpus_dir: str, split: str, *,
                   answers: dict[str, list[str]] | None = None,
                   qrels: dict[str, list[str]] | None = None) -> list[Question]:
    """Questions of one split with answers and answer frequency; raises on the first bad line.

    ``answers`` and ``qrels`` already read by the caller are used instead of reading the files again.
    """
    root = Path(root)
    answers_file = layout.answers_path(root, dataset)
    topics_file = layout.topics_path(root, dataset, corpus_dir, split)
    answers = read_answers(answers_file) if answers is None else answers
    topics = read_topics(topics_file)
    qrels_file = layout.qrels_path(root, dataset, corpus_dir)
    if split == "unsupported":
        frequency = lambda qid: 0  # noqa: E731
    elif qrels is not None or qrels_file.is_file():
        qrels = read_qrels(qrels_file) if qrels is None else qrels
        frequency = lambda qid: len(qrels.get(qid, ()))  # noqa: E731
    else:
        frequency = lambda qid: None  # noqa: E731
    questions = []
    for qid, question in topics.items():
        if qid not in answers:
            raise NanoKnowInputError(f"qid {qid!r} has no answers in {answers_file}",
                                     file=topics_file, field="qid")
        questions.append(Question(qid, question, answers[qid], split, frequency(qid)))
    return questions
