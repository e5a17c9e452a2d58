"""A tiny nanochat model for the diary recipe: tokenizer, fresh weights, checkpoint writing.

The model is the project's own :class:`nanochat_adapter.model.NanoChatGPT` (generation
``2025-10``) and is saved in nanochat's on-disk format (``model_<step>.pt``,
``meta_<step>.json``, ``tokenizer.pkl``, ``token_bytes.pt``), so ``lm_eval --model nanochat``
loads it like any nanochat checkpoint.
"""

from __future__ import annotations

from pathlib import Path

GENERATION = "2025-10"
#: marks a checkpoint folder this recipe wrote (earlier steps in it may be replaced)
OWNER_MARKER = ".nanoknow-diary-train"


def train_tokenizer(texts: list[str], num_merges: int):
    """A byte-level BPE ``tiktoken.Encoding`` with nanochat's special tokens, trained on ``texts``."""
    from nanochat_adapter.tiny_checkpoints import train_tiny_encoding

    return train_tiny_encoding(num_merges, text="\n".join(texts))


def new_model(vocab_size: int, *, depth: int, width: int, heads: int, sequence_len: int, seed: int):
    """A freshly initialised ``NanoChatGPT`` (nanochat's init: zero output projections, small head)."""
    import torch

    from nanochat_adapter.architectures import GENERATIONS
    from nanochat_adapter.model import NanoChatGPT

    if width % heads or (width // heads) % 2:
        raise ValueError(f"width {width} must split into {heads} heads of even size")
    config = {"sequence_len": sequence_len, "vocab_size": vocab_size, "n_layer": depth,
              "n_head": heads, "n_kv_head": heads, "n_embd": width}
    torch.manual_seed(seed)
    model = NanoChatGPT(config, GENERATIONS[GENERATION])
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name == "transformer.wte.weight":
                p.normal_(0.0, 1.0)
            elif name == "lm_head.weight":
                p.normal_(0.0, 0.001)
            elif name.endswith("c_proj.weight"):
                p.zero_()
            else:
                p.normal_(0.0, p.shape[1] ** -0.5)
    return model


def save_checkpoint(folder: str | Path, model, encoding, *, step: int, meta_extra: dict | None = None) -> Path:
    """Write ``model`` and ``encoding`` as a nanochat checkpoint folder; return the folder."""
    import torch

    from nanochat_adapter.tiny_checkpoints import save_nanochat_files

    from nanoknow_common.errors import NanoKnowInputError

    folder = Path(folder)
    marker = folder / OWNER_MARKER
    stale = [*folder.glob("model_*.pt"), *folder.glob("meta_*.json")]
    if stale and not marker.is_file():  # never delete a checkpoint this recipe did not write
        raise NanoKnowInputError(f"holds a checkpoint ({stale[0].name}) that `nanoknow diary train` did not write; "
                                 "choose another --out", file=folder, field="--out")
    folder.mkdir(parents=True, exist_ok=True)
    marker.write_text("written by nanoknow diary train\n", encoding="utf-8")
    for path in stale:  # lm-eval loads the latest step: earlier steps of this recipe go
        path.unlink()
    state = {k: v.detach().to("cpu", torch.float32).clone() for k, v in model.state_dict().items()}
    meta = {"step": step, "model_config": model.config, **(meta_extra or {})}
    return save_nanochat_files(folder, state, meta, encoding, step=step)
