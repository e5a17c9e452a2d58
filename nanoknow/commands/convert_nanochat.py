"""``nanoknow convert nanochat``: command-line flags for :mod:`nanochat_adapter.convert`."""

from __future__ import annotations

import logging

from pathlib import Path
import argparse
from nanochat_adapter.convert import convert


log = logging.getLogger(__name__)

EXAMPLE = "nanoknow convert-nanochat ~/.cache/nanochat/chatsft_checkpoints/d32 out/nanochat-d32-hf --step 650"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("checkpoint", help="nanochat checkpoint folder or Hugging Face repo id")
    parser.add_argument("output", type=Path, help="folder to write the transformers model into")
    parser.add_argument("--step", type=int, default=None, help="checkpoint step (default: latest)")
    parser.add_argument("--tokenizer", default=None, help="tokenizer.pkl if not next to the checkpoint")
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"],
                        help="dtype of the written weights (default float32)")
    parser.add_argument("--force", action="store_true", help="write into a non-empty output folder")


def run(args: argparse.Namespace) -> int:
    out = convert(args.checkpoint, args.output, step=args.step, tokenizer=args.tokenizer,
                  dtype=args.dtype, force=args.force)
    log.info("wrote %s", out)
    return 0
