"""What a fine-tuning run records about itself, and the lm-eval command line that evaluates it.

``RUN/best/diary_run.json`` travels with the best checkpoint, so a report that reads an
lm-eval output folder (whose ``model_args`` name the checkpoint) finds the model's size, family
and the run's variant without guessing.
"""

from __future__ import annotations

import json
from pathlib import Path

from projection.diary.generator import SIZES
from nanoknow_common.errors import NanoKnowInputError

RUN_INFO = "diary_run.json"


def default_label(model: str, gguf_file: str | None = None) -> str:
    """A short model name for tables and legends: the GGUF file's stem, else the id's or folder's last part."""
    if gguf_file:
        return Path(gguf_file).stem
    return Path(model.rstrip("/")).name or model


def describe_model(model) -> dict:
    """Family, architecture and parameter counts of a loaded transformers model."""
    config = model.config
    return {"model_type": config.model_type, "architectures": list(getattr(config, "architectures", None) or []),
            "is_encoder_decoder": bool(getattr(config, "is_encoder_decoder", False)),
            "parameters": int(model.num_parameters()),
            "non_embedding_parameters": int(model.num_parameters(exclude_embeddings=True))}


def task_for(diarists: int) -> str | None:
    """The ``nanoknow_diary_*`` task of a set of ``diarists``, or None when no task has that size."""
    return next((f"nanoknow_diary_{suffix}" for suffix, size in SIZES.items() if size == diarists), None)


def read_run_info(checkpoint: str | Path) -> dict:
    """The ``diary_run.json`` of a checkpoint written by ``diary finetune`` (input error if missing)."""
    path = Path(checkpoint) / RUN_INFO
    if not path.is_file():
        raise NanoKnowInputError("missing: not a checkpoint written by `nanoknow diary finetune`", file=path)
    try:
        info = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise NanoKnowInputError(f"not valid JSON: {err}", file=path) from None
    for field in ("label", "variant", "diarists", "parameters", "model_type"):
        if field not in info:
            raise NanoKnowInputError("missing", file=path, field=field)
    return info


def lm_eval_argv(checkpoint: str | Path, info: dict, *, diary_dir: str | Path, output_path: str | Path,
                 device: str | None = None, batch_size: str | int = 16, limit: float | None = None,
                 gen_kwargs: str | None = None) -> list[str]:
    """``lm_eval`` arguments that evaluate ``checkpoint`` on its diary task's test split, logging samples."""
    task = task_for(info["diarists"])
    if task is None:
        raise NanoKnowInputError(f"no nanoknow_diary task has {info['diarists']} diarists "
                                 f"(sizes: {', '.join(SIZES)})", field="diarists")
    model_args = f"pretrained={Path(checkpoint).resolve()}" + (",backend=seq2seq" if info.get("is_encoder_decoder") else "")
    argv = ["--model", "hf", "--model_args", model_args, "--tasks", task,
            "--metadata", json.dumps({"diary_dir": str(Path(diary_dir).resolve())}), "--batch_size", str(batch_size),
            "--log_samples", "--output_path", str(output_path)]
    if device:
        argv += ["--device", device]
    if limit is not None:
        argv += ["--limit", str(limit)]
    if gen_kwargs:
        argv += ["--gen_kwargs", gen_kwargs]
    return argv
