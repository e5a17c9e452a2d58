"""``nanoknow count``: whole-corpus answer document counts per question (both rules, per shard)."""

from __future__ import annotations

import argparse
import json

EXAMPLE = ("nanoknow count --dataset nq squad hotpotqa --corpus /data/fineweb-edu-100b-shuffle --out counts/fineweb-edu"
           "  # add --resume to continue, --ray [ADDRESS] to spread the shards over a Ray cluster")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    src = parser.add_argument_group("questions")
    src.add_argument("--dataset", nargs="+", required=True,
                     help="dataset(s) of --data-dir (nq squad hotpotqa ...), or the name for --questions")
    src.add_argument("--data-dir", default=None,
                     help="NanoKnow questions root (default: $NANOKNOW_DATA_DIR, then the fetch cache)")
    src.add_argument("--corpus-dir", "--corpus-name", dest="corpus_dir", default="fineweb-edu",
                     help="corpus folder of the data dir whose topics (both splits) list the questions "
                          "(default fineweb-edu)")
    src.add_argument("--questions", default=None,
                     help='or a JSONL of {"qid", "question", "answer": [...]} per line (as nanoknow project)')
    cor = parser.add_argument_group("corpus")
    cor.add_argument("--corpus", required=True, help="parquet shards: a directory or hf://, s3://, https:// prefix")
    cor.add_argument("--shards", default=None,
                     help="shard numbers, e.g. 0-99,120 (default: every shard of a local corpus; "
                          "required for a remote one)")
    cor.add_argument("--text-column", default="text")
    run_ = parser.add_argument_group("run")
    run_.add_argument("--out", required=True, help="run folder: shards/*.json as shards finish, then counts.jsonl")
    run_.add_argument("--resume", action="store_true", help="continue an interrupted run in --out")
    run_.add_argument("--batch-rows", type=int, default=1024, help="rows per record batch (default 1024)")
    run_.add_argument("--ray", nargs="?", const="auto", default=None, metavar="ADDRESS",
                      help="count with Ray Data: a cluster address (ray://host:10001, host:6379), 'auto' "
                           "(the default: the cluster this machine joined) or 'local' (start Ray here)")
    run_.add_argument("--workers", type=int, default=None,
                      help="Ray: counting tasks at once (default: every CPU of the cluster)")
    run_.add_argument("--no-progress", action="store_true", help="no progress bar")


def run(args: argparse.Namespace) -> int:
    from projection.count.counting import CountSettings, count_answers

    settings = CountSettings(corpus=str(args.corpus), out=str(args.out), datasets=tuple(args.dataset),
                             data_dir=args.data_dir, corpus_dir=args.corpus_dir, questions_file=args.questions,
                             text_column=args.text_column, shards=args.shards, resume=args.resume,
                             batch_rows=args.batch_rows, ray=args.ray, workers=args.workers,
                             progress=not args.no_progress)
    print(json.dumps(count_answers(settings)))
    return 0
