"""``nanoknow demo``: command-line flags for :mod:`nanoknow.demo.run_demo`."""

from __future__ import annotations

from nanoknow_common.errors import NanoKnowInputError
from pathlib import Path
import time
from nanoknow.demo.run_demo import run_demo


EXAMPLE = "nanoknow demo --out nanoknow-demo --limit 20"


def add_arguments(parser) -> None:
    parser.add_argument("--out", type=Path, default=Path("nanoknow-demo"), help="working folder (default nanoknow-demo)")
    parser.add_argument("--limit", type=int, default=20, help="questions per lm-eval task (default 20; 0 = all)")
    parser.add_argument("--questions", type=int, default=60,
                        help="questions planted in the sample corpus (default 60: NQ when NanoKnow data is "
                             "available, else the embedded sample)")
    parser.add_argument("--model-args", default=None,
                        help="lm-eval --model_args for the nanochat model, e.g. pretrained=karpathy/nanochat-d32 "
                             "(default: a tiny random checkpoint written by the demo)")
    parser.add_argument("--data-dir", type=Path, default=None,
                        help="NanoKnow data for real NQ questions (default: $NANOKNOW_DATA_DIR, the fetch cache, "
                             "else the embedded sample)")
    parser.add_argument("--max-gen-toks", type=int, default=32, help="new tokens per answer (default 32)")
    parser.add_argument("--fresh", action="store_true", help="delete what earlier demo runs made in --out (recorded in "
                        "--out/.steps/created.json; nothing else) and start over")


def run(args) -> int:
    if args.limit < 0 or args.questions < 1 or args.max_gen_toks < 1:
        raise NanoKnowInputError("--limit must be >= 0, --questions and --max-gen-toks positive")
    start = time.monotonic()
    report = run_demo(args.out, limit=args.limit or None, questions=args.questions, model_args=args.model_args,
                      data_dir=args.data_dir, fresh=args.fresh, max_gen_toks=args.max_gen_toks)
    print((report / "summary.md").read_text(encoding="utf-8"))
    print(f"NanoKnow demo finished in {time.monotonic() - start:.0f} s. Report: {report.resolve()}")
    return 0
