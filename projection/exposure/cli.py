"""``nanoknow exposure``: split a dataset's questions by what one checkpoint read.

Writes one JSON line per question (status, frequency read, frequency in the corpus, first
shard with evidence) and prints the exposure and a summary table.
"""

from __future__ import annotations

import argparse
import logging
from dataclasses import dataclass
from pathlib import Path

from projection.data_root import resolve_data_dir
from projection.errors import NanoKnowInputError

from . import corpora
from .exposure import Exposure
from .question_exposure import ExposureSummary, format_summary, question_exposures, summarize, write_records

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


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-dir", type=Path, default=None,
                        help="NanoKnow questions/qrels root (default: $NANOKNOW_DATA_DIR, then the fetch cache)")
    parser.add_argument("--dataset", required=True, help="nq, squad, hotpotqa, or any dataset folder of the data dir")
    parser.add_argument("--corpus-name", default="fineweb",
                        help="corpus the questions are projected on: fineweb (folder fineweb-edu) or climbmix")
    how = parser.add_mutually_exclusive_group(required=True)
    how.add_argument("--checkpoint", type=Path, help="nanochat checkpoint folder (base, mid or SFT)")
    how.add_argument("--shards-seen", type=int, help="state it: shards shard_00000..shard_<N-1> were read")
    how.add_argument("--tokens-read", type=int, help="state it: tokens the loader read (a band of shards follows)")
    how.add_argument("--exposure-file", type=Path, help="an exposure saved with --save-exposure")
    parser.add_argument("--step", type=int, help="checkpoint step (default: the latest meta_<step>.json)")
    parser.add_argument("--base-checkpoint", type=Path,
                        help="base checkpoint a mid/SFT checkpoint came from, when its files do not say")
    parser.add_argument("--checkpoint-corpus", help="corpus the checkpoint read (default: inferred from its meta)")
    parser.add_argument("--shards-downloaded", type=int,
                        help="shard files the run had (nanochat trains on all but the last)")
    parser.add_argument("--chars-per-token", type=float, help="the tokenizer's characters per token on the corpus")
    parser.add_argument("--measure-corpus", type=Path,
                        help="local parquet shards to measure chars per shard (and chars/token) on")
    parser.add_argument("--measure-docs", type=int, default=2000, help="documents to measure chars/token on")
    parser.add_argument("--out", type=Path, required=True, help="per-question JSONL (must not exist)")
    parser.add_argument("--save-exposure", type=Path, help="also write the exposure as JSON (must not exist)")


def run(args: argparse.Namespace) -> int:
    if args.step is not None and args.checkpoint is None:
        raise NanoKnowInputError("--step needs --checkpoint", field="--step")
    settings = ExposureSettings(
        dataset=args.dataset, out=args.out, corpus_name=corpora.corpus_name(args.corpus_name),
        checkpoint=args.checkpoint, step=args.step, base_checkpoint=args.base_checkpoint,
        shards_seen=args.shards_seen, tokens_read=args.tokens_read, exposure_file=args.exposure_file,
        checkpoint_corpus=args.checkpoint_corpus, shards_downloaded=args.shards_downloaded,
        chars_per_token=args.chars_per_token, measure_corpus=args.measure_corpus,
        measure_docs=args.measure_docs, save_exposure=args.save_exposure)
    exposure, summary, warning = exposure_report(args.data_dir, settings)
    lines = [f"exposure: {exposure.describe()}"]
    lines += [f"  corpus: {exposure.corpus} ({exposure.corpus_source})"]
    lines += [f"  note: {note}" for note in exposure.notes]
    if warning:
        lines.append(warning)
    lines += ["", format_summary(args.dataset, summary, exposure), "", f"per-question records -> {args.out}"]
    print("\n".join(lines))
    return 0
