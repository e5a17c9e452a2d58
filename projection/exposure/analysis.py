"""Exposure analysis (``nanoknow exposure``): split a dataset's questions by what one checkpoint read.

Writes one JSON line per question (status, frequency read, frequency in the corpus, first
shard with evidence) and prints the exposure and a summary table.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from projection.data.data_root import resolve_data_dir
from nanoknow_common.errors import NanoKnowInputError

from . import corpora
from .exposure import Exposure
from .question_exposure import ExposureSummary, question_exposures, summarize, write_records

log = logging.getLogger(__name__)

EXAMPLE = ("nanoknow exposure --data-dir ../shared/nanoknow-data --dataset nq "
           "--checkpoint ~/.cache/nanochat/base_checkpoints/d20 --out d20-nq-exposure.jsonl")


@dataclass
class ExposureSettings:
    """What ``nanoknow exposure`` needs: one way to the exposure, the questions, the output."""

    dataset: str
    out: Path
    corpus_name: str = "fineweb"
    checkpoint: Path | None = None
    step: int | None = None
    base_checkpoint: Path | None = None
    shards_seen: int | None = None
    tokens_read: int | None = None
    exposure_file: Path | None = None
    checkpoint_corpus: str | None = None
    shards_downloaded: int | None = None
    chars_per_token: float | None = None
    measure_corpus: Path | None = None
    measure_docs: int = 2000
    save_exposure: Path | None = None


def build_exposure(settings: ExposureSettings) -> Exposure:
    """The exposure from a checkpoint, a saved exposure file, or a stated count."""
    if settings.checkpoint is not None:
        return Exposure.from_checkpoint(settings.checkpoint, settings.step, corpus=settings.checkpoint_corpus,
                                        base_checkpoint=settings.base_checkpoint,
                                        shards_downloaded=settings.shards_downloaded,
                                        chars_per_token=settings.chars_per_token,
                                        measure_corpus=settings.measure_corpus, measure_docs=settings.measure_docs)
    if settings.exposure_file is not None:
        return Exposure.load(settings.exposure_file)
    return Exposure.from_stated(settings.shards_seen, settings.tokens_read,
                                corpus=settings.checkpoint_corpus or settings.corpus_name,
                                chars_per_token=settings.chars_per_token,
                                shards_downloaded=settings.shards_downloaded)


def exposure_report(data_dir: Path | None, settings: ExposureSettings) -> tuple[Exposure, ExposureSummary, str | None]:
    """Compute the exposure, write the per-question records, return (exposure, summary, corpus warning)."""
    root = resolve_data_dir(data_dir)
    exposure = build_exposure(settings)
    warning = exposure.corpus_mismatch(settings.corpus_name)
    if warning:
        log.warning(warning)
    records = question_exposures(root, settings.dataset, corpora.corpus_dir_for(settings.corpus_name), exposure)
    if settings.save_exposure is not None:
        if Path(settings.save_exposure).exists():
            raise NanoKnowInputError("exposure file exists; remove it or choose another path",
                                     file=settings.save_exposure, field="--save-exposure")
        exposure.save(settings.save_exposure)
    write_records(records, settings.out, exposure=exposure)
    return exposure, summarize(records), warning
