"""Find, read and validate a nanochat checkpoint (local folder or Hugging Face repo).

A checkpoint folder holds ``model_<step:06d>.pt`` (state dict), ``meta_<step:06d>.json``
(``model_config`` …) and usually ``tokenizer.pkl`` + ``token_bytes.pt`` (sometimes in a
``tokenizer/`` sub-folder). :func:`load_checkpoint` returns a ready :class:`NanoChatGPT`
and :class:`NanoChatTokenizer`.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from pathlib import Path

from nanoknow_common.errors import NanoKnowInputError

from .architectures import GENERATIONS, Generation, check_config, check_state_dict, detect_generation

log = logging.getLogger(__name__)

_MODEL_FILE = re.compile(r"^model_(\d+)\.pt$")
_TORCH_COMPILE_PREFIX = "_orig_mod."


@dataclass
class CheckpointFiles:
    """The files of one step of a checkpoint."""

    folder: Path
    step: int
    model: Path
    meta: Path
    tokenizer: Path | None


def _looks_like_repo_id(text: str) -> bool:
    return bool(re.fullmatch(r"[A-Za-z0-9][\w.-]*/[\w.-]+", text))


def resolve_folder(pretrained: str | Path, *, step: int | None = None, revision: str | None = None) -> Path:
    """A local checkpoint folder, or the snapshot of HF repo ``pretrained`` (downloaded).

    Only the files needed are fetched: ``meta_*``, the chosen ``model_*.pt`` and tokenizer files.
    """
    path = Path(pretrained).expanduser()
    if path.is_dir():
        return path
    if not _looks_like_repo_id(str(pretrained)):
        raise NanoKnowInputError("no such checkpoint folder (and not a Hugging Face repo id)", file=path)
    from huggingface_hub import snapshot_download

    patterns = ["meta_*.json", "tokenizer.pkl", "token_bytes.pt", "tokenizer/*"]
    patterns.append("model_*.pt" if step is None else f"model_{step:06d}.pt")
    try:
        local = snapshot_download(repo_id=str(pretrained), revision=revision, allow_patterns=patterns)
    except Exception as err:  # network, auth, missing repo
        raise NanoKnowInputError(f"cannot download Hugging Face repo {pretrained}: "
                                 f"{type(err).__name__}: {err}") from err
    return Path(local)


def available_steps(folder: Path) -> list[int]:
    """Steps that have a ``model_<step>.pt`` in ``folder``, ascending."""
    return sorted(int(m.group(1)) for p in folder.iterdir() if (m := _MODEL_FILE.match(p.name)))


def find_files(folder: Path, *, step: int | None = None, tokenizer: str | Path | None = None) -> CheckpointFiles:
    """Locate the model/meta/tokenizer files for ``step`` (default: the latest step)."""
    steps = available_steps(folder)
    if not steps:
        raise NanoKnowInputError("no model_<step>.pt file: not a nanochat checkpoint folder", file=folder)
    if step is None:
        step = steps[-1]
    elif step not in steps:
        raise NanoKnowInputError(f"step {step} not found; available steps: {steps}", file=folder)
    model = folder / f"model_{step:06d}.pt"
    meta = folder / f"meta_{step:06d}.json"
    if not meta.is_file():
        raise NanoKnowInputError(f"missing {meta.name} next to {model.name}", file=folder)
    if tokenizer is not None:
        tok = Path(tokenizer).expanduser()
        if tok.is_dir():
            tok = tok / "tokenizer.pkl"
        if not tok.is_file():
            raise NanoKnowInputError("tokenizer file not found", file=tok)
    else:
        candidates = [folder / "tokenizer.pkl", folder / "tokenizer" / "tokenizer.pkl",
                      folder.parent / "tokenizer" / "tokenizer.pkl"]
        tok = next((c for c in candidates if c.is_file()), None)
    return CheckpointFiles(folder, step, model, meta, tok)


def read_meta(path: Path) -> dict:
    """``meta_*.json`` as a dict, with a validated ``model_config``."""
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise NanoKnowInputError(f"unreadable meta json: {err}", file=path) from err
    if not isinstance(meta, dict) or "model_config" not in meta:
        raise NanoKnowInputError("no model_config", file=path)
    meta["model_config"] = check_config(meta["model_config"], file=path)
    return meta


def read_state_dict(path: Path) -> dict:
    """The model state dict, loaded with ``weights_only=True`` on CPU, ``_orig_mod.`` stripped."""
    import torch

    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # truncated zip, pickle with forbidden globals, …
        reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise NanoKnowInputError(f"cannot load state dict ({type(err).__name__}: {reason})", file=path) from err
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise NanoKnowInputError("expected a dict of tensors (a model state dict)", file=path)
    return {k.removeprefix(_TORCH_COMPILE_PREFIX): v for k, v in state.items()}


def check_finite(named_tensors, *, file=None) -> None:
    """Refuse NaN/inf weights (a diverged or corrupted run), naming the first bad tensor.

    Without this check such a checkpoint loads silently and generates garbage or NaN scores.
    """
    import torch

    bad = []
    for name, tensor in named_tensors:
        if not tensor.is_floating_point() or tensor.numel() == 0:
            continue
        # min and max are NaN when any value is, ±inf when one is: one fast pass over the weights
        low, high = torch.aminmax(tensor.detach().reshape(-1))
        if not (bool(torch.isfinite(low)) and bool(torch.isfinite(high))):
            bad.append((name, int(torch.isnan(tensor).sum()), int(torch.isinf(tensor).sum()), tensor.numel()))
    if bad:
        name, nans, infs, total = bad[0]
        more = f" ({len(bad) - 1} more tensors too: {_names(bad[1:])})" if len(bad) > 1 else ""
        raise NanoKnowInputError(f"non-finite weights: {nans} NaN and {infs} infinite of {total} values{more}; "
                                 "a diverged or corrupted checkpoint cannot be evaluated", file=file, field=name)


def _names(bad: list, limit: int = 5) -> str:
    names = [b[0] for b in bad]
    return ", ".join(names[:limit]) + (f", … ({len(names) - limit} more)" if len(names) > limit else "")


@dataclass
class LoadedCheckpoint:
    model: object  # NanoChatGPT
    tokenizer: object  # NanoChatTokenizer
    generation: Generation
    meta: dict
    files: CheckpointFiles


def load_checkpoint(pretrained: str | Path, *, step: int | None = None, tokenizer: str | Path | None = None,
                    device: str = "cpu", dtype=None, generation: str | None = None,
                    softcap: float | None = None, revision: str | None = None) -> LoadedCheckpoint:
    """Load a nanochat checkpoint of any known generation into a :class:`NanoChatGPT`.

    ``generation`` overrides detection (see :data:`GENERATIONS`); ``softcap`` overrides the
    generation's logit softcap. Raises :class:`NanoKnowInputError` naming the file for any
    mismatch between meta, state dict and tokenizer.
    """
    import torch

    from .model import NanoChatGPT
    from .tokenizer import NanoChatTokenizer

    folder = resolve_folder(pretrained, step=step, revision=revision)
    files = find_files(folder, step=step, tokenizer=tokenizer)
    if files.tokenizer is None:
        raise NanoKnowInputError("no tokenizer.pkl in the checkpoint folder (or tokenizer/); "
                                 "pass tokenizer=<path>", file=folder)
    meta = read_meta(files.meta)
    config = meta["model_config"]
    state = read_state_dict(files.model)
    shapes = {k: tuple(v.shape) for k, v in state.items()}
    if generation is not None:
        if generation not in GENERATIONS:
            raise NanoKnowInputError(f"unknown generation {generation!r}; known: {sorted(GENERATIONS)}")
        gen = GENERATIONS[generation]
    else:
        gen = detect_generation(shapes, file=files.model)
    vocab_rows, with_ve = check_state_dict(gen, config, shapes, file=files.model)
    check_finite(state.items(), file=files.model)
    if "window_pattern" in config and gen.short_window_divisor is None and set(config["window_pattern"].upper()) != {"L"}:
        raise NanoKnowInputError(f"window_pattern {config['window_pattern']!r} with {gen.name} weights "
                                 "(that generation has no sliding windows)", file=files.meta, field="window_pattern")
    tok = NanoChatTokenizer.from_file(files.tokenizer)
    if tok.vocab_size != config["vocab_size"]:
        raise NanoKnowInputError(f"tokenizer has {tok.vocab_size} tokens but model_config.vocab_size is "
                                 f"{config['vocab_size']}", file=files.tokenizer)
    dtype = resolve_dtype(dtype, device)
    model = NanoChatGPT(config, gen, vocab_rows=vocab_rows, with_value_embeds=with_ve, softcap=softcap)
    model.load_state_dict({k: v.to(dtype) for k, v in state.items()}, strict=True)
    model.to(device=device, dtype=dtype).eval()
    # keep the rotary frequencies in fp32 whatever the weight dtype
    model.inv_freq = model.inv_freq.to(torch.float32)
    log.info("loaded nanochat %s step %d (generation %s, %d layers, width %d) on %s/%s",
             files.folder, files.step, gen.name, config["n_layer"], config["n_embd"], device, dtype)
    return LoadedCheckpoint(model, tok, gen, meta, files)


def resolve_dtype(dtype, device: str):
    """``dtype`` as a torch dtype; default bf16 on CUDA, fp32 elsewhere."""
    import torch

    if dtype is None or dtype == "auto":
        return torch.bfloat16 if str(device).startswith("cuda") else torch.float32
    if isinstance(dtype, torch.dtype):
        return dtype
    names = {"bf16": torch.bfloat16, "bfloat16": torch.bfloat16, "fp16": torch.float16,
             "float16": torch.float16, "half": torch.float16, "fp32": torch.float32,
             "float32": torch.float32, "float": torch.float32}
    if str(dtype) not in names:
        raise NanoKnowInputError(f"unknown dtype {dtype!r}; use one of {sorted(names)}", field="dtype")
    return names[str(dtype)]
