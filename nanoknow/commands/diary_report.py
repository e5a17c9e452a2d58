"""``nanoknow diary report``: the paper's two diary figures from lm-eval output folders (see :mod:`.figures`)."""

from __future__ import annotations

import argparse

from nanoknow.diary.figures import FIGURE_METRICS

EXAMPLE = "nanoknow diary report runs/diary-sweep/eval --out runs/diary-sweep/figures"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("results", nargs="+", metavar="RESULTS",
                        help="lm-eval output folders (or results_*.json files) of checkpoints from `diary finetune`")
    parser.add_argument("--out", required=True, help="folder for the figures and diary_results.csv")
    parser.add_argument("--metric", choices=FIGURE_METRICS, default="exact_recall",
                        help="task metric on the y axis (default exact_recall)")


def run(args: argparse.Namespace) -> int:
    from nanoknow.diary.figures import draw_figures, load_results

    rows = load_results(args.results, args.metric)
    for path in draw_figures(rows, args.out, args.metric):
        print(path)
    return 0
