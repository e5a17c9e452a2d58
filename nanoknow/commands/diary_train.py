"""``nanoknow diary train``: command-line flags for :mod:`nanoknow.diary.train`."""

from __future__ import annotations

import logging

from projection.diary.generator import DEFAULT_SEED
from nanoknow_common.errors import NanoKnowInputError
from pathlib import Path
from projection.diary.files import VARIANT_FOLDERS
import argparse
import json
from nanoknow.diary.train import TASK_MAX_GEN_TOKS, eval_command, load_training_data, recall_check, train_model


log = logging.getLogger(__name__)

EXAMPLE = ("nanoknow diary train --diarists 1000 --out runs/diary-1k --max-minutes 18 && "
           "lm_eval --model nanochat --model_args pretrained=runs/diary-1k --device cpu "
           "--tasks nanoknow_diary_1k --log_samples --output_path runs/diary-1k-eval")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    source = parser.add_argument_group("data (a `diary make` folder, or generated in memory)")
    source.add_argument("--diary-dir", help="a `nanoknow diary make` folder to train on")
    source.add_argument("--diarists", type=int, default=1000, help="diarists to generate if no --diary-dir (default 1000)")
    source.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"diary seed if no --diary-dir (default {DEFAULT_SEED})")
    source.add_argument("--variant", choices=tuple(VARIANT_FOLDERS), default="standard",
                        help="standard: one document per entry; simplified: one per diarist")
    parser.add_argument("--out", required=True, help="checkpoint folder to write")
    model = parser.add_argument_group("model")
    model.add_argument("--depth", type=int, default=2)
    model.add_argument("--width", type=int, default=96)
    model.add_argument("--heads", type=int, default=4)
    model.add_argument("--merges", type=int, default=1000, help="BPE merges of the tokenizer (default 1000)")
    model.add_argument("--sequence-len", type=int, default=1024,
                       help="the model's context (meta); must exceed prompt + max_gen_toks (512) for lm-eval")
    run = parser.add_argument_group("training")
    run.add_argument("--steps", type=int, default=4000)
    run.add_argument("--max-minutes", type=float, default=18.0)
    run.add_argument("--batch-rows", type=int, default=8, help="rows per step")
    run.add_argument("--row-len", type=int, default=0,
                     help="tokens per packed row (default 0: the longest document + 1, so no document is cut)")
    run.add_argument("--lr", type=float, default=3e-3)
    run.add_argument("--warmup", type=int, default=50, help="warm-up steps")
    run.add_argument("--train-seed", type=int, default=0)
    run.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    run.add_argument("--check-questions", type=int, default=50,
                     help="training and test questions to check recall on at the end (0: none)")


def run(args: argparse.Namespace) -> int:
    import torch

    from nanochat_adapter.tokenizer import NanoChatTokenizer

    from nanoknow.diary.tiny_model import new_model, save_checkpoint, train_tokenizer

    for field in ("steps", "batch_rows", "depth", "width", "heads", "merges"):
        if getattr(args, field) <= 0:
            raise NanoKnowInputError(f"must be positive, got {getattr(args, field)}", field="--" + field.replace("_", "-"))
    if not args.max_minutes > 0:
        raise NanoKnowInputError(f"must be positive, got {args.max_minutes}", field="--max-minutes")
    if args.sequence_len < TASK_MAX_GEN_TOKS + 64:
        log.warning("--sequence-len %d leaves no room for the tasks' prompt + %d generated tokens; "
                    "lower max_gen_toks with --gen_kwargs when evaluating", args.sequence_len, TASK_MAX_GEN_TOKS)
    if args.threads:
        torch.set_num_threads(args.threads)
    texts, qa, num_diarists = load_training_data(args.diary_dir, args.diarists, args.seed, args.variant)
    encoding = train_tokenizer(texts, args.merges)
    tokenizer = NanoChatTokenizer(encoding)
    docs = [tokenizer.encode(t, allow_special=False) for t in texts]
    log.info("%d training documents, %d tokens; vocabulary %d", len(docs), sum(map(len, docs)), encoding.n_vocab)
    row_len = args.row_len or max(map(len, docs)) + 1
    if row_len + 1 > args.sequence_len:
        raise NanoKnowInputError(f"rows of {row_len} tokens do not fit the model's context", field="--sequence-len")
    model = new_model(encoding.n_vocab, depth=args.depth, width=args.width, heads=args.heads,
                      sequence_len=args.sequence_len, seed=args.train_seed)
    log.info("model: %.2fM parameters", sum(p.numel() for p in model.parameters()) / 1e6)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    summary = train_model(model, docs, tokenizer.bos_id, steps=args.steps, max_seconds=args.max_minutes * 60,
                          batch_rows=args.batch_rows, row_len=row_len, lr=args.lr, warmup=args.warmup,
                          seed=args.train_seed, log_path=out / "train_log.jsonl")
    source = args.diary_dir or f"generated: {args.diarists} diarists, seed {args.seed}"
    save_checkpoint(out, model, encoding, step=summary["steps"],
                    meta_extra={"diary": {"source": source, "variant": args.variant, **summary}})
    log.info("trained %s", summary)
    if args.check_questions > 0:
        with open(out / "recall_check.jsonl", "w", encoding="utf-8") as f:
            for split in ("train", "test"):
                metrics, results = recall_check(model, tokenizer, qa[split][:args.check_questions])
                log.info("recall on %d %s questions: %s", len(results), split, metrics)
                for r in results:
                    f.write(json.dumps(r) + "\n")
    log.info("checkpoint: %s; evaluate with: %s", out, eval_command(out, num_diarists, args.diary_dir, args.seed))
    return 0
