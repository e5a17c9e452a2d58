"""``nanoknow diary make``: command-line flags for :mod:`projection.diary.generator`."""

from __future__ import annotations

import argparse
import logging

from nanoknow_common.errors import NanoKnowInputError
from projection.diary.files import DEFAULT_ROWS_PER_SHARD, write_diary_set
from projection.diary.generator import DEFAULT_SEED, check_num_diarists, generate_diary_set

log = logging.getLogger(__name__)


EXAMPLE = "nanoknow diary make --diarists 8000 --seed 1234 --out data/diary-8k"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--diarists", required=True, help="number of diarists (the benchmark uses 1000..64000)")
    parser.add_argument("--seed", default=str(DEFAULT_SEED),
                        help=f"random seed (default {DEFAULT_SEED}, the one the lm-eval tasks use)")
    parser.add_argument("--out", required=True, help="output folder")
    parser.add_argument("--rows-per-shard", default=str(DEFAULT_ROWS_PER_SHARD),
                        help=f"documents per parquet shard (default {DEFAULT_ROWS_PER_SHARD})")


def run(args: argparse.Namespace) -> int:
    diarists = check_num_diarists(_integer(args.diarists, "--diarists"), field="--diarists")
    seed = _integer(args.seed, "--seed")
    rows = _integer(args.rows_per_shard, "--rows-per-shard", minimum=1)
    diary = generate_diary_set(diarists, seed)
    manifest = write_diary_set(diary, args.out, rows_per_shard=rows)
    log.info("manifest: %s", manifest)
    return 0


def _integer(value: str, field: str, *, minimum: int | None = None) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise NanoKnowInputError(f"must be an integer, got {value!r}", field=field) from None
    if minimum is not None and number < minimum:
        raise NanoKnowInputError(f"must be at least {minimum}, got {number}", field=field)
    return number
