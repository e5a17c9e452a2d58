"""``nanoknow report``: command-line flags for :mod:`nanoknow.report.write_report`."""

from __future__ import annotations

from pathlib import Path
from nanoknow.report.write_report import write_report


EXAMPLE = ("lm_eval --model nanochat --model_args pretrained=CKPT --tasks nanoknow_nq --log_samples "
           "--output_path runs/ && nanoknow report runs/ --out report/")


def add_arguments(parser) -> None:
    parser.add_argument("results", nargs="+", type=Path, metavar="RESULTS",
                        help="lm-eval --output_path folders (or one model folder in them), run with --log_samples")
    parser.add_argument("--out", type=Path, required=True, help="folder for summary.md/.csv and the figures")
    parser.add_argument("--judge-cache", default=None, help="llm_judge cache file (default: the judge's default)")
    parser.add_argument("--frequency-axis", choices=["qrels", "substring", "token"], default="qrels",
                        help="what frequency.png buckets by: qrels documents (capped by BM25's top-k, default) or "
                             "whole-corpus answer documents from `nanoknow count` (substring or token rule)")
    parser.add_argument("--top-k", type=int, default=100, help="the projection's BM25 depth, to count capped questions")
    exposure = parser.add_argument_group("exposure (split supported questions into seen/unseen)")
    exposure.add_argument("--shards-seen", type=int, help="shards shard_00000.. every evaluated checkpoint read")
    exposure.add_argument("--tokens-read", type=int, help="or tokens read from the corpus")
    exposure.add_argument("--exposure-from", help="or a nanochat checkpoint folder / exposure JSON")
    exposure.add_argument("--exposure-step", type=int, help="step of --exposure-from (default its latest)")


def run(args) -> int:
    stated = {k: getattr(args, k) for k in ("shards_seen", "tokens_read", "exposure_from", "exposure_step")
              if getattr(args, k) is not None}
    report = write_report(args.results, args.out, judge_cache=args.judge_cache, exposure=stated or None,
                          frequency_axis=args.frequency_axis, top_k=args.top_k)
    print(f"report: {report.files['summary.md']}")
    for name, reason in report.skipped.items():
        print(f"skipped {name}: {reason}")
    return 0
