"""``nanoknow index``: command-line flags for :mod:`projection.index.build_index`."""

from __future__ import annotations

import logging

from pathlib import Path
import argparse
from projection.index.build_index import build_corpus_index


log = logging.getLogger(__name__)

EXAMPLE = "nanoknow index --corpus sample-corpus --index sample-index --threads 2"

#: What the CLI says when a stop signal ends the run.
ON_INTERRUPT = "--index was not changed and the scratch files are removed; run the same command again"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--corpus", required=True, help="directory of shard_XXXXX.parquet files (column text)")
    parser.add_argument("--index", required=True, type=Path, help="index directory to create")
    parser.add_argument("--threads", type=int, default=1, help="indexing threads (default 1)")
    parser.add_argument("--store-raw", action="store_true",
                        help="also store each document's raw JSON in the index (large; not needed by `project`)")
    parser.add_argument("--store-contents", action="store_true", help="store the analysed contents field")
    parser.add_argument("--store-docvectors", action="store_true", help="store document vectors (for RM3 etc.)")
    parser.add_argument("--text-column", default="text", help="parquet column holding the text (default text)")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing Lucene index (only once the new one is complete)")


def run(args: argparse.Namespace) -> int:
    count = build_corpus_index(args.corpus, args.index, threads=args.threads, store_raw=args.store_raw,
                               store_contents=args.store_contents, store_docvectors=args.store_docvectors,
                               text_column=args.text_column, overwrite=args.overwrite)
    log.info("done: %d documents", count)
    return 0
