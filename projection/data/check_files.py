"""``nanoknow data verify``: validate every NanoKnow file under a data root and count it.

Checks, per dataset and corpus: each line's shape (answers JSON, topics TSV, TREC qrels with
``shard_XXXXX_ROW`` doc ids), duplicate lines and qids, a qid in both splits, a supported qid
without qrels, a qrels qid that is not a supported topic, a topic without answers. Topics and
qrels files that are absent (e.g. SQuAD qrels in the reference copy) are reported as missing,
not as errors; a dataset's answers file is always needed, so its absence is an error. Bytes
that are not UTF-8 stop the check with the file and line named.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from projection.data import layout
from nanoknow_common.errors import NanoKnowInputError
from projection.data.manifest import load_manifest
from projection.data.files import read_answers, read_qrels, read_topics
from nanoknow_common.file_io import text_lines

MAX_ERRORS_SHOWN = 20


@dataclass
class CorpusReport:
    """Counts and findings for one ``<dataset>/<corpus_dir>``."""

    supported: int | None = None
    unsupported: int | None = None
    qrels_lines: int | None = None
    qrels_questions: int | None = None
    missing: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def _line_of(path: Path, qid: str, separator: str) -> int | None:
    """1-based line of the first record of ``qid`` in a topics/qrels file (for error messages)."""
    prefix = qid + separator
    for number, line in text_lines(path):
        if line.startswith(prefix):
            return number
    return None


def _count_lines(path: Path) -> int:
    with open(path, "rb") as handle:
        return sum(1 for _ in handle)


def verify_corpus(root: Path, dataset: str, corpus_dir: str,
                  answers: dict[str, list[str]] | None) -> CorpusReport:
    """Validate the topics and qrels of one dataset/corpus against its answers."""
    report = CorpusReport()
    problems: list[NanoKnowInputError] = []
    topics: dict[str, dict[str, str]] = {}
    for split in layout.SPLITS:
        path = layout.topics_path(root, dataset, corpus_dir, split)
        if not path.is_file():
            report.missing.append(str(path.relative_to(root)))
            continue
        topics[split] = read_topics(path, problems)
        setattr(report, split, len(topics[split]))
    qrels_file = layout.qrels_path(root, dataset, corpus_dir)
    qrels = None
    if qrels_file.is_file():
        qrels = read_qrels(qrels_file, problems)
        report.qrels_lines = _count_lines(qrels_file)
        report.qrels_questions = len(qrels)
    else:
        report.missing.append(str(qrels_file.relative_to(root)))

    supported = topics.get("supported", {})
    unsupported_file = layout.topics_path(root, dataset, corpus_dir, "unsupported")
    for qid in supported.keys() & topics.get("unsupported", {}).keys():
        problems.append(NanoKnowInputError(f"qid {qid!r} is in both splits", file=unsupported_file,
                                           line=_line_of(unsupported_file, qid, "\t"), field="qid"))
    if qrels is not None:
        supported_file = layout.topics_path(root, dataset, corpus_dir, "supported")
        for qid in sorted(supported.keys() - qrels.keys(), key=str):
            problems.append(NanoKnowInputError(f"supported qid {qid!r} has no qrels", file=supported_file,
                                               line=_line_of(supported_file, qid, "\t"), field="qid"))
        for qid in sorted(qrels.keys() - supported.keys(), key=str):
            problems.append(NanoKnowInputError(f"qrels qid {qid!r} is not a supported topic",
                                               file=qrels_file, line=_line_of(qrels_file, qid, " "),
                                               field="qid"))
    if answers is not None:
        for split, split_topics in topics.items():
            path = layout.topics_path(root, dataset, corpus_dir, split)
            for qid in sorted(split_topics.keys() - answers.keys(), key=str):
                problems.append(NanoKnowInputError(f"qid {qid!r} has no answers", file=path,
                                                   line=_line_of(path, qid, "\t"), field="qid"))
    report.errors = [str(p) for p in problems]
    return report


def verify_data_dir(root: Path) -> dict:
    """Verify every dataset/corpus found under ``root`` (and name manifest files that are absent)."""
    root = Path(root)
    expected = {(f.dataset, f.corpus_dir) for f in load_manifest().files if f.corpus_dir}
    pairs = sorted(set(layout.discover(root)) | {p for p in expected if (root / p[0]).is_dir()})
    result: dict = {"data_dir": str(root), "datasets": {}, "ok": True}
    answers_by_dataset: dict[str, tuple[dict | None, list[str]]] = {}
    for dataset, corpus_dir in pairs:
        if dataset not in answers_by_dataset:
            path = layout.answers_path(root, dataset)
            problems: list[NanoKnowInputError] = []
            answers = None
            if path.is_file():
                answers = read_answers(path, problems)
            else:  # every dataset needs its answers: a missing one (or a folder in its place) is an error
                problems.append(NanoKnowInputError("answers file " + ("is not a file" if path.exists() else "missing"),
                                                   file=path))
            answers_by_dataset[dataset] = (answers, [str(p) for p in problems])
            result["datasets"][dataset] = {
                "answers": None if answers is None else len(answers),
                "answers_missing": answers is None,
                "answer_errors": [str(p) for p in problems],
                "corpora": {},
            }
        answers, _ = answers_by_dataset[dataset]
        report = verify_corpus(root, dataset, corpus_dir, answers)
        result["datasets"][dataset]["corpora"][corpus_dir] = report.__dict__
    if not pairs:
        raise NanoKnowInputError(f"no NanoKnow files (<dataset>/<corpus>/topics.nanoknow-*.tsv) under {root}")
    result["ok"] = not any(
        d["answer_errors"] or any(c["errors"] for c in d["corpora"].values())
        for d in result["datasets"].values()
    )
    return result






