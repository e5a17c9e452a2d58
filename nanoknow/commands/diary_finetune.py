"""``nanoknow diary finetune``: fine-tune one pretrained model on a diary set (see :mod:`.finetune`)."""

from __future__ import annotations

import argparse
import dataclasses

from nanoknow.diary.finetune import VARIANTS, FinetuneSettings

EXAMPLE = ("nanoknow diary make --diarists 1000 --out data/diary-1k && "
           "nanoknow diary finetune --model EleutherAI/pythia-70m --diary-dir data/diary-1k "
           "--out runs/pythia-70m-1k --variant standard")

_DEFAULTS = FinetuneSettings(model="", diary_dir="", out="")

#: option -> (settings field, type, help); the defaults come from FinetuneSettings.
_OPTIONS = {
    "--learning-rate": ("learning_rate", float, "peak learning rate (AdamW)"),
    "--lr-scheduler": ("lr_scheduler", str, "transformers scheduler name"),
    "--warmup-steps": ("warmup_steps", int, "linear warm-up steps"),
    "--weight-decay": ("weight_decay", float, "AdamW weight decay"),
    "--batch-size": ("batch_size", int, "documents per step (per device)"),
    "--gradient-accumulation": ("gradient_accumulation", int, "steps accumulated per optimizer step"),
    "--epochs": ("epochs", float, "upper bound on epochs (the plateau normally stops earlier)"),
    "--max-steps": ("max_steps", int, "stop after this many optimizer steps (-1: no limit)"),
    "--max-minutes": ("max_minutes", float, "stop after this much wall time, evaluating the last step"),
    "--eval-steps": ("eval_steps", int, "validate every N optimizer steps"),
    "--patience": ("patience", int, "stop after this many validations without improvement"),
    "--min-delta": ("min_delta", float, "least change that counts as an improvement"),
    "--val-questions": ("val_questions", int, "validation questions recalled at each validation (0: all)"),
    "--eval-batch-size": ("eval_batch_size", int, "batch size of validation (loss and generation)"),
    "--max-new-tokens": ("max_new_tokens", int, "generation limit of validation recall (the tasks' max_gen_toks)"),
    "--logging-steps": ("logging_steps", int, "log the training loss every N steps"),
    "--seed": ("seed", int, "training seed"),
    "--threads": ("threads", int, "torch CPU threads (0: torch's default)"),
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", required=True, help="Hugging Face model id or folder (decoder-only or encoder-decoder)")
    parser.add_argument("--gguf-file", help="a GGUF file inside --model to load (transformers' gguf_file=)")
    parser.add_argument("--label", help="the model's name in tables and figures (default: from --model)")
    parser.add_argument("--diary-dir", required=True, help="a `nanoknow diary make` folder")
    parser.add_argument("--out", required=True, help="run folder (a finished run there is skipped)")
    parser.add_argument("--variant", choices=VARIANTS, default=_DEFAULTS.variant,
                        help="standard: one document per entry; simplified: one per diarist")
    parser.add_argument("--select", default=_DEFAULTS.select,
                        choices=("exact_recall", "count_accuracy", "entry_accuracy", "loss"),
                        help="validation metric that picks the best checkpoint (ties: lower validation loss)")
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), default=_DEFAULTS.device)
    parser.add_argument("--bf16", action="store_true", help="bfloat16 mixed precision")
    parser.add_argument("--no-eval-on-start", dest="eval_on_start", action="store_false",
                        help="skip the validation before training (default: validate the pretrained model first)")
    parser.add_argument("--no-group-by-length", dest="group_by_length", action="store_false",
                        help="plain random batches (default: batches of similar lengths, in random order)")
    for option, (name, kind, text) in _OPTIONS.items():
        parser.add_argument(option, type=kind, default=getattr(_DEFAULTS, name),
                            help=f"{text} (default {getattr(_DEFAULTS, name)})")


def settings_from_args(args: argparse.Namespace) -> FinetuneSettings:
    """The settings the options describe."""
    names = {f.name for f in dataclasses.fields(FinetuneSettings)}
    return FinetuneSettings(**{k: v for k, v in vars(args).items() if k in names})


def run(args: argparse.Namespace) -> int:
    from nanoknow.diary.finetune import finetune

    result = finetune(settings_from_args(args))
    validation = {k[len("eval_"):]: v for k, v in result.best_validation.items()
                  if k.startswith("eval_") and k[len("eval_"):] in ("loss", "exact_recall", "count_accuracy",
                                                                   "entry_accuracy", "count_error")}
    print(f"{'skipped (finished): ' if result.skipped else ''}best checkpoint {result.best_dir} "
          f"(step {result.best_step} of {result.steps}, stopped by {result.stop_reason}); validation {validation}")
    if result.lm_eval_command:
        print(f"test split: {result.lm_eval_command}")
    return 0
