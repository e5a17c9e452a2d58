"""Per question: did this checkpoint read its evidence, how much of it, and from which shard on.

For each NanoKnow question of a dataset and corpus: *seen* (a qrels document lies in a shard
the run surely read), *unseen* (supported, but no qrels document in a shard it possibly read),
*uncertain* (only with a band), *unsupported* (no qrels document anywhere); frequency read
(qrels documents in surely / possibly read shards), frequency in the corpus (all of them, the
``answer_frequency`` of the built datasets) and the first shard holding evidence.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import asdict, dataclass
from pathlib import Path

from projection.data import layout
from projection.corpus.shards import parse_doc_id
from nanoknow_common.errors import NanoKnowInputError
from projection.data.files import read_qrels, read_topics

from .exposure import SEEN, UNCERTAIN, UNSEEN, UNSUPPORTED, Exposure

STATUSES = (SEEN, UNCERTAIN, UNSEEN, UNSUPPORTED)


@dataclass(frozen=True)
class QuestionExposure:
    """One question's exposure under one checkpoint's :class:`Exposure`."""

    qid: str
    status: str
    frequency_in_corpus: int
    frequency_read: int  # qrels documents in surely-read shards
    frequency_read_possibly: int  # qrels documents in possibly-read shards (= frequency_read when exact)
    first_shard: int | None  # the first shard with a qrels document (None when unsupported)
    first_doc_id: str | None

    def to_dict(self) -> dict:
        return asdict(self)


def records_from_qrels(qrels: dict[str, list[str]], supported: list[str], unsupported: list[str],
                       exposure: Exposure, *, qrels_file: Path | None = None) -> list[QuestionExposure]:
    """Records for supported qids (each must have qrels) then unsupported ones, in the given order."""
    records = []
    for qid in supported:
        doc_ids = qrels.get(qid)
        if not doc_ids:
            raise NanoKnowInputError(f"supported qid {qid!r} has no qrels documents", file=qrels_file, field="qid")
        located = sorted((*parse_doc_id(d, file=qrels_file), d) for d in doc_ids)
        shards = [shard for shard, _, _ in located]
        surely, possibly = exposure.frequency_read(shards)
        records.append(QuestionExposure(qid, exposure.status(shards), len(doc_ids), surely, possibly,
                                        located[0][0], located[0][2]))
    for qid in unsupported:
        records.append(QuestionExposure(qid, UNSUPPORTED, 0, 0, 0, None, None))
    return records


def question_exposures(data_dir: str | Path, dataset: str, corpus_dir: str, exposure: Exposure, *,
                       include_unsupported: bool = True) -> list[QuestionExposure]:
    """Records of every question of ``dataset`` on ``corpus_dir`` (supported first, in topics order).

    Reads the upstream layout: the supported topics, their qrels, and (when present and wanted)
    the unsupported topics.
    """
    root = Path(data_dir)
    supported = list(read_topics(layout.topics_path(root, dataset, corpus_dir, "supported")))
    unsupported_file = layout.topics_path(root, dataset, corpus_dir, "unsupported")
    unsupported = list(read_topics(unsupported_file)) if include_unsupported and unsupported_file.is_file() else []
    qrels_file = layout.qrels_path(root, dataset, corpus_dir)
    return records_from_qrels(read_qrels(qrels_file), supported, unsupported, exposure, qrels_file=qrels_file)


def seen_qids(data_dir: str | Path, dataset: str, corpus_dir: str, exposure: Exposure) -> set[str]:
    """Supported qids with a qrels document in a shard the checkpoint surely read."""
    return {r.qid for r in question_exposures(data_dir, dataset, corpus_dir, exposure, include_unsupported=False)
            if r.status == SEEN}


def unseen_qids(data_dir: str | Path, dataset: str, corpus_dir: str, exposure: Exposure) -> set[str]:
    """Supported qids none of whose qrels documents lie in a shard the checkpoint possibly read."""
    return {r.qid for r in question_exposures(data_dir, dataset, corpus_dir, exposure, include_unsupported=False)
            if r.status == UNSEEN}


@dataclass(frozen=True)
class ExposureSummary:
    """Counts, shares of the supported questions, and medians over the supported questions."""

    counts: dict[str, int]
    supported: int
    share_seen: float | None
    share_uncertain: float | None
    share_unseen: float | None
    median_frequency_read: float | None  # over all supported questions (0 for unseen ones)
    median_frequency_read_possibly: float | None
    median_frequency_in_corpus: float | None
    median_frequency_read_when_seen: float | None  # over the seen questions only

    def to_dict(self) -> dict:
        return asdict(self)


def _median(values: list[int]) -> float | None:
    return statistics.median(values) if values else None


def summarize(records: list[QuestionExposure]) -> ExposureSummary:
    """The summary table's numbers for one dataset."""
    counts = {status: sum(1 for r in records if r.status == status) for status in STATUSES}
    supported = [r for r in records if r.status != UNSUPPORTED]
    n = len(supported)
    share = (lambda k: counts[k] / n) if n else (lambda k: None)
    return ExposureSummary(
        counts=counts, supported=n, share_seen=share(SEEN), share_uncertain=share(UNCERTAIN),
        share_unseen=share(UNSEEN),
        median_frequency_read=_median([r.frequency_read for r in supported]),
        median_frequency_read_possibly=_median([r.frequency_read_possibly for r in supported]),
        median_frequency_in_corpus=_median([r.frequency_in_corpus for r in supported]),
        median_frequency_read_when_seen=_median([r.frequency_read for r in supported if r.status == SEEN]))


def _num(value) -> str:
    if value is None:
        return "-"
    return f"{value:g}" if isinstance(value, float) else f"{value:,}"


def format_summary(dataset: str, summary: ExposureSummary, exposure: Exposure) -> str:
    """A markdown table like issue 12's: shards read, seen of supported, median frequency read / in corpus."""
    shards = (f"{exposure.shards_surely_read}" if exposure.exact
              else f"{exposure.shards_surely_read}-{exposure.shards_possibly_read} (best guess {exposure.shards_nominal})")
    pct = (lambda s: f" ({100 * s:.1f}%)" if s is not None else "")
    seen = f"{summary.counts[SEEN]:,} of {summary.supported:,}{pct(summary.share_seen)}"
    lines = ["| dataset | shards read | seen (>= 1 supporting doc read) | uncertain | unseen | unsupported "
             "| median frequency read / in corpus |",
             "|---|---|---|---|---|---|---|",
             f"| {dataset} | {shards} | {seen} | {summary.counts[UNCERTAIN]:,} | "
             f"{summary.counts[UNSEEN]:,}{pct(summary.share_unseen)} | {summary.counts[UNSUPPORTED]:,} | "
             f"{_num(summary.median_frequency_read)} / {_num(summary.median_frequency_in_corpus)} |"]
    return "\n".join(lines)


def write_records(records: list[QuestionExposure], path: str | Path, *, exposure: Exposure | None = None) -> Path:
    """One JSON object per question; refuses to overwrite an existing file."""
    path = Path(path)
    if path.exists():
        raise NanoKnowInputError("output file exists; remove it or choose another --out", file=path, field="--out")
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "x", encoding="utf-8") as handle:
        for record in records:
            row = record.to_dict()
            if exposure is not None:
                row["corpus"] = exposure.corpus
            handle.write(json.dumps(row) + "\n")
    return path
