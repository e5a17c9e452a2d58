"""``nanoknow make sample corpus``: command-line flags for :mod:`nanoknow.demo.sample_corpus`."""

from __future__ import annotations

import logging

from nanoknow_common.errors import NanoKnowInputError
from nanoknow_common.names import check_plain_name
from pathlib import Path
import argparse
import json
import os
from nanoknow.demo.sample_corpus import load_data_dir_questions, load_embedded_questions, make_sample_corpus


log = logging.getLogger(__name__)

EXAMPLE = "nanoknow make-sample-corpus --out sample-corpus  # 100 embedded questions, 2 shards"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", required=True, type=Path, help="directory to write the shards into")
    parser.add_argument("--data-dir", type=Path, default=None,
                        help="NanoKnow data directory to draw questions from (default: env NANOKNOW_DATA_DIR; "
                             "without either, the 100 embedded questions)")
    parser.add_argument("--embedded", action="store_true", help="use the embedded questions even if a data dir is set")
    parser.add_argument("--dataset", default="nq", help="dataset of the data dir (default: nq)")
    parser.add_argument("--corpus-dir", default="fineweb-edu", help="corpus folder whose topics list the questions")
    parser.add_argument("--questions", type=int, default=300, help="questions drawn from a data dir (default 300)")
    parser.add_argument("--shards", type=int, default=2, help="number of parquet shards (default 2)")
    parser.add_argument("--filler-docs", type=int, default=3000, help="filler documents (default 3000)")
    parser.add_argument("--seed", type=int, default=0)


def run(args: argparse.Namespace) -> int:
    data_dir = args.data_dir or (Path(os.environ["NANOKNOW_DATA_DIR"]) if os.environ.get("NANOKNOW_DATA_DIR") else None)
    if args.embedded or data_dir is None:
        questions = load_embedded_questions()
        log.info("using the %d embedded sample questions", len(questions))
    else:
        check_plain_name(args.dataset, field="--dataset")  # folders of --data-dir, never paths
        check_plain_name(args.corpus_dir, field="--corpus-dir")
        if not Path(data_dir).is_dir():
            raise NanoKnowInputError("NanoKnow data directory does not exist", file=data_dir, field="--data-dir")
        questions = load_data_dir_questions(Path(data_dir), args.dataset, args.corpus_dir, args.questions, args.seed)
    counts = make_sample_corpus(args.out, questions, shards=args.shards, filler_docs=args.filler_docs, seed=args.seed)
    print(json.dumps(counts))
    return 0
