"""The architecture generations of nanochat's GPT and how to tell them apart.

nanochat changed its model several times without versioning checkpoints. Some changes add
weights (detectable from the state dict), others only change constants in the forward pass
(rotary base, a q/k scale, the short window length). A :class:`Generation` records both; it
is detected from the state-dict keys and shapes (:func:`detect_generation`), and
:func:`expected_shapes` lists every tensor a checkpoint of that generation must hold, so
unknown or missing weights are reported instead of silently ignored.

Generations (dates of the upstream commits that introduced them):

* ``2025-10`` – the October 2025 release (d20/d32/d34 checkpoints of the NanoKnow paper):
  rotary (base 10k) then QK RMS-norm, relu² MLP, GQA, untied embeddings, logit softcap 15;
  from December 2025 the vocab may be padded to a multiple of 64 (same generation).
* ``2026-01`` – per-layer ``resid_lambdas``/``x0_lambdas``, sliding windows
  (``window_pattern``, short = half context) and value embeddings on alternating layers with
  a 32-channel gate of range (0, 2).
* ``2026-03-09`` – autoresearch round 1: rotary base 100k, q/k scaled by 1.15 after the
  norm, value-embedding gate of 12 channels and range (0, 3), short window = ceil(T/3) to 128.
* ``2026-03-14`` – autoresearch round 2: smear (previous-token mixing) and backout (subtract
  the mid-layer residual), q/k scale 1.2, short window = ceil(T/4) to 128. Softcap 15.

Upstream briefly used a logit softcap of 20 (2026-03-02 to 03-09) on ``2026-01``-shaped
weights; nothing in the files shows it, so ``softcap`` can be overridden when loading.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from nanoknow_common.errors import NanoKnowInputError

#: Fields ``meta_*.json`` → ``model_config`` may carry.
CONFIG_FIELDS = {"sequence_len", "vocab_size", "n_layer", "n_head", "n_kv_head", "n_embd",
                 "window_pattern"}
REQUIRED_CONFIG_FIELDS = CONFIG_FIELDS - {"window_pattern"}


@dataclass(frozen=True)
class Generation:
    """Constants and optional parts of one nanochat architecture generation."""

    name: str
    rotary_base: float
    qk_scale: float
    softcap: float
    short_window_divisor: int | None  # None: no sliding windows
    round_window_to: int  # short windows are rounded up to a multiple of this
    has_lambdas: bool
    value_embed_gate_channels: int | None  # None: no value embeddings
    value_embed_gate_range: float
    value_embeds_optional: bool  # Jan 2026 checkpoints from before value embeddings existed
    has_smear_backout: bool

    def window_sizes(self, config: dict) -> list[int | None]:
        """Per-layer attention window (keys up to ``w`` positions back; None = unlimited)."""
        n_layer, seq = config["n_layer"], config["sequence_len"]
        if self.short_window_divisor is None:
            return [None] * n_layer
        pattern = str(config.get("window_pattern") or "L").upper()
        short = math.ceil(seq / self.short_window_divisor / self.round_window_to) * self.round_window_to
        sizes = [short if pattern[i % len(pattern)] == "S" else seq for i in range(n_layer)]
        sizes[-1] = seq
        return sizes


GENERATIONS: dict[str, Generation] = {g.name: g for g in (
    Generation("2025-10", rotary_base=10_000, qk_scale=1.0, softcap=15.0,
               short_window_divisor=None, round_window_to=1, has_lambdas=False,
               value_embed_gate_channels=None, value_embed_gate_range=0.0,
               value_embeds_optional=False, has_smear_backout=False),
    Generation("2026-01", rotary_base=10_000, qk_scale=1.0, softcap=15.0,
               short_window_divisor=2, round_window_to=1, has_lambdas=True,
               value_embed_gate_channels=32, value_embed_gate_range=2.0,
               value_embeds_optional=True, has_smear_backout=False),
    Generation("2026-03-09", rotary_base=100_000, qk_scale=1.15, softcap=15.0,
               short_window_divisor=3, round_window_to=128, has_lambdas=True,
               value_embed_gate_channels=12, value_embed_gate_range=3.0,
               value_embeds_optional=False, has_smear_backout=False),
    Generation("2026-03-14", rotary_base=100_000, qk_scale=1.2, softcap=15.0,
               short_window_divisor=4, round_window_to=128, has_lambdas=True,
               value_embed_gate_channels=12, value_embed_gate_range=3.0,
               value_embeds_optional=False, has_smear_backout=True),
)}

SMEAR_CHANNELS = 24


def has_value_embed(layer: int, n_layer: int) -> bool:
    """Value embeddings sit on alternating layers, always including the last one."""
    return layer % 2 == (n_layer - 1) % 2


def padded_vocab(vocab_size: int, multiple: int = 64) -> int:
    return -(-vocab_size // multiple) * multiple


def detect_generation(shapes: dict[str, tuple], *, file=None) -> Generation:
    """Pick the generation from state-dict key names and shapes (``{key: shape}``)."""
    if "smear_gate.weight" in shapes or "backout_lambda" in shapes:
        return GENERATIONS["2026-03-14"]
    if "resid_lambdas" in shapes or "x0_lambdas" in shapes:
        gate_widths = {shape[-1] for key, shape in shapes.items() if key.endswith("attn.ve_gate.weight")}
        if gate_widths == {12}:
            return GENERATIONS["2026-03-09"]
        if gate_widths <= {32}:
            return GENERATIONS["2026-01"]
        raise NanoKnowInputError(f"unknown nanochat generation: value-embedding gate widths "
                                 f"{sorted(gate_widths)} (known: 32, 12)", file=file)
    return GENERATIONS["2025-10"]


def check_config(config: dict, *, file=None) -> dict:
    """Validate ``model_config`` from ``meta_*.json``; returns a clean copy."""
    if not isinstance(config, dict):
        raise NanoKnowInputError("model_config must be an object", file=file, field="model_config")
    unknown = sorted(set(config) - CONFIG_FIELDS)
    if unknown:
        raise NanoKnowInputError(f"unknown fields {unknown} (a newer nanochat generation?)",
                                 file=file, field="model_config")
    missing = sorted(REQUIRED_CONFIG_FIELDS - set(config))
    if missing:
        raise NanoKnowInputError(f"missing fields {missing}", file=file, field="model_config")
    for key in REQUIRED_CONFIG_FIELDS:
        if not isinstance(config[key], int) or config[key] <= 0:
            raise NanoKnowInputError(f"{key} must be a positive integer, got {config[key]!r}",
                                     file=file, field="model_config")
    if config["n_embd"] % config["n_head"] or config["n_head"] % config["n_kv_head"]:
        raise NanoKnowInputError("n_embd must divide by n_head and n_head by n_kv_head",
                                 file=file, field="model_config")
    pattern = config.get("window_pattern")
    if pattern is not None and (not isinstance(pattern, str) or not pattern
                                or set(pattern.upper()) - {"S", "L"}):
        raise NanoKnowInputError(f"window_pattern must be a string of S and L, got {pattern!r}",
                                 file=file, field="model_config")
    return dict(config)


def expected_shapes(generation: Generation, config: dict, *, vocab_rows: int,
                    with_value_embeds: bool = True) -> dict[str, tuple]:
    """Every state-dict entry (name → shape) a checkpoint of ``generation`` must hold."""
    n_layer, n_embd = config["n_layer"], config["n_embd"]
    head_dim = n_embd // config["n_head"]
    kv_dim = config["n_kv_head"] * head_dim
    shapes = {"transformer.wte.weight": (vocab_rows, n_embd), "lm_head.weight": (vocab_rows, n_embd)}
    for i in range(n_layer):
        p = f"transformer.h.{i}."
        shapes[p + "attn.c_q.weight"] = (n_embd, n_embd)
        shapes[p + "attn.c_k.weight"] = (kv_dim, n_embd)
        shapes[p + "attn.c_v.weight"] = (kv_dim, n_embd)
        shapes[p + "attn.c_proj.weight"] = (n_embd, n_embd)
        shapes[p + "mlp.c_fc.weight"] = (4 * n_embd, n_embd)
        shapes[p + "mlp.c_proj.weight"] = (n_embd, 4 * n_embd)
        if generation.value_embed_gate_channels and with_value_embeds and has_value_embed(i, n_layer):
            shapes[p + "attn.ve_gate.weight"] = (config["n_kv_head"], generation.value_embed_gate_channels)
            shapes[f"value_embeds.{i}.weight"] = (vocab_rows, kv_dim)
    if generation.has_lambdas:
        shapes["resid_lambdas"] = (n_layer,)
        shapes["x0_lambdas"] = (n_layer,)
    if generation.has_smear_backout:
        shapes["smear_gate.weight"] = (1, SMEAR_CHANNELS)
        shapes["smear_lambda"] = (1,)
        shapes["backout_lambda"] = (1,)
    return shapes


def check_state_dict(generation: Generation, config: dict, shapes: dict[str, tuple], *,
                     file=None) -> tuple[int, bool]:
    """Compare the state dict with what ``generation`` expects; raise listing every difference.

    Returns ``(vocab_rows, with_value_embeds)``: the embedding rows (vocab size, possibly
    padded to a multiple of 64) and whether value embeddings are present.
    """
    vocab = config["vocab_size"]
    wte = shapes.get("transformer.wte.weight")
    vocab_rows = wte[0] if wte and wte[0] in (vocab, padded_vocab(vocab)) else vocab
    with_ve = bool(generation.value_embed_gate_channels) and (
        not generation.value_embeds_optional or any(k.startswith("value_embeds.") for k in shapes))
    expected = expected_shapes(generation, config, vocab_rows=vocab_rows, with_value_embeds=with_ve)
    missing = sorted(set(expected) - set(shapes))
    unexpected = sorted(set(shapes) - set(expected))
    wrong = sorted(f"{k} {tuple(shapes[k])} (expected {expected[k]})"
                   for k in set(expected) & set(shapes) if tuple(shapes[k]) != expected[k])
    if missing or unexpected or wrong:
        parts = []
        if unexpected:
            parts.append(f"unknown weights {_short(unexpected)}")
        if missing:
            parts.append(f"missing weights {_short(missing)}")
        if wrong:
            parts.append(f"wrong shapes {_short(wrong)}")
        raise NanoKnowInputError(
            f"state dict does not match nanochat generation {generation.name} with model_config "
            f"{config}: " + "; ".join(parts), file=file)
    return vocab_rows, with_ve


def _short(items: list[str], limit: int = 8) -> str:
    shown = ", ".join(items[:limit])
    return f"[{shown}{f', … ({len(items) - limit} more)' if len(items) > limit else ''}]"
