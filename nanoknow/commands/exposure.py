"""``nanoknow exposure``: command-line flags for :mod:`projection.exposure.analysis`."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from nanoknow_common.errors import NanoKnowInputError
from nanoknow_common.names import check_plain_name
from projection.exposure import corpora
from projection.exposure.analysis import EXAMPLE, ExposureSettings, exposure_report
from projection.exposure.question_exposure import format_summary

__all__ = ["EXAMPLE", "add_arguments", "run"]

log = logging.getLogger(__name__)


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
    check_plain_name(args.dataset, field="--dataset")  # a folder of --data-dir, never a path
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
