"""``nanoknow build``: command-line flags for :mod:`projection.datasets.build`."""

from __future__ import annotations

from projection.stage1.passages import DEFAULT_WINDOW_WORDS
from nanoknow_common.errors import NanoKnowInputError
from pathlib import Path
from projection.datasets.build import BuildSettings, DEFAULT_DISTRACTORS, DEFAULT_GRID_WORDS, build


EXAMPLE = ("nanoknow build --data-dir ~/.cache/nanoknow/questions-and-qrels --dataset nq "
           "--corpus hf://datasets/karpathy/fineweb-edu-100b-shuffle --out builds/ --index indexes/fineweb-edu")


def add_arguments(parser) -> None:
    parser.add_argument("--data-dir", type=Path, default=None,
                        help="NanoKnow questions/qrels root (default: $NANOKNOW_DATA_DIR, then the fetch cache)")
    parser.add_argument("--dataset", required=True, help="nq, squad, hotpotqa, or any dataset folder of the data dir")
    parser.add_argument("--corpus-dir", default="fineweb-edu", help="corpus folder name in the data dir")
    parser.add_argument("--corpus", required=True, help="parquet shards: a directory or hf://, s3://, https:// prefix")
    parser.add_argument("--out", type=Path, required=True, help="build folder (datasets go to OUT/<dataset>/<corpus>/)")
    parser.add_argument("--index", help="Lucene index for BM25 hard-negative distractors (default: random documents; "
                        "seeded random ones are always kept as well, in random_distractors)")
    parser.add_argument("--squad-source", help="SQuAD v1.1 dev for original_context: a local .json/.jsonl/.parquet "
                        "or a Hub id such as rajpurkar/squad")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--window-words", type=int, default=DEFAULT_WINDOW_WORDS,
                        help=f"words in the oracle passage, centred on the answer (default {DEFAULT_WINDOW_WORDS})")
    parser.add_argument("--grid-words", type=int, default=DEFAULT_GRID_WORDS,
                        help="words per passage in the distractor grid, oracle and distractors alike "
                             f"(default {DEFAULT_GRID_WORDS}: k=8 then fits a 2,048-token context)")
    parser.add_argument("--distractors", type=int, default=DEFAULT_DISTRACTORS,
                        help=f"distractors per question (default {DEFAULT_DISTRACTORS}, the grid's largest k; "
                             "the grid holds only questions that have this many)")
    parser.add_argument("--chunk-size", type=int, default=1000, help="questions per resumable chunk")
    parser.add_argument("--counts", default=None,
                        help="`nanoknow count` output (folder or counts.jsonl): whole-corpus answer documents per row")


def run(args) -> int:
    if args.window_words < 1 or args.grid_words < 1 or args.distractors < 0 or args.chunk_size < 1:
        raise NanoKnowInputError("--window-words, --grid-words and --chunk-size must be positive, "
                                 "--distractors non-negative")
    settings = BuildSettings(dataset=args.dataset, corpus_dir=args.corpus_dir, corpus=str(args.corpus),
                             index=args.index, seed=args.seed, window_words=args.window_words, grid_words=args.grid_words,
                             num_distractors=args.distractors, squad_source=args.squad_source,
                             chunk_size=args.chunk_size, counts=args.counts)
    info = build(args.data_dir, settings, args.out)
    counts = info["counts"]
    print(f"built {args.dataset}/{args.corpus_dir}: {counts['supported']} supported "
          f"({counts['supported_without_oracle']} without an oracle passage), "
          f"{counts['unsupported']} unsupported; distractor grid: {info['grid']['questions']['distractors']} "
          f"questions ({info['distractor_source']} distractors) -> {Path(args.out) / args.dataset / args.corpus_dir}")
    return 0
