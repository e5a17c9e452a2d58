"""``nanoknow diary sweep``: fine-tune and evaluate a grid of models x sizes x variants (see :mod:`.sweep`)."""

from __future__ import annotations

import argparse

EXAMPLE = ("nanoknow diary sweep --config nanoknow/diary/grid_example.yaml --out runs/diary-sweep && "
           "nanoknow diary report runs/diary-sweep/eval --out runs/diary-sweep/figures")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", required=True, help="grid YAML: models, sizes, variants, finetune, eval")
    parser.add_argument("--out", required=True, help="sweep folder (data/, runs/, eval/; finished steps are skipped)")


def run(args: argparse.Namespace) -> int:
    from nanoknow.diary.sweep import load_grid, run_sweep

    records = run_sweep(load_grid(args.config), args.out)
    for record in records:
        print(f"{record['run']}: best step {record['best_step']} ({record['stop_reason']}), results {record['results']}")
    return 0
