"""Tiny random nanochat checkpoints in nanochat's own on-disk format, for tests and demos.

:func:`write_tiny_checkpoint` trains a small byte-level BPE tokenizer (a real
``tiktoken.Encoding`` with nanochat's special tokens), builds a random
:class:`~nanochat_adapter.model.NanoChatGPT` of the requested generation and writes
``model_<step>.pt``, ``meta_<step>.json``, ``tokenizer.pkl`` and ``token_bytes.pt``.
"""

from __future__ import annotations

import json
import pickle
from collections import Counter
from pathlib import Path

from .architectures import GENERATIONS, padded_vocab
from .tokenizer import SPECIAL_TOKENS

#: nanochat's pre-tokenisation regex (GPT-4 style, numbers in groups of at most two).
SPLIT_PATTERN = (r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,2}| ?[^\s\p{L}\p{N}]++[\r\n]*"""
                 r"""|\s*[\r\n]|\s+(?!\S)|\s+""")

_SAMPLE_TEXT = (
    "The capital of France is Paris. Who wrote the novel? The answer is in the question. "
    "What is the name of the largest planet in the solar system? Jupiter is the largest planet. "
    "When was the first world war? It started in 1914 and ended in 1918. The the the and and of of "
    "Question: who sang the song? Answer: the band sang the song in the year 1999. "
) * 4


def train_tiny_encoding(num_merges: int = 48, text: str = _SAMPLE_TEXT):
    """A byte-level BPE ``tiktoken.Encoding`` with ``num_merges`` merges and nanochat's specials."""
    import regex
    import tiktoken

    words = Counter(tuple(bytes([b]) for b in piece.encode("utf-8"))
                    for piece in regex.findall(SPLIT_PATTERN, text))
    ranks = {bytes([i]): i for i in range(256)}
    for _ in range(num_merges):
        pairs = Counter()
        for word, count in words.items():
            for a, b in zip(word, word[1:]):
                pairs[a, b] += count
        if not pairs:
            break
        (a, b), _ = max(pairs.items(), key=lambda item: (item[1], item[0]))
        ranks[a + b] = len(ranks)
        merged = Counter()
        for word, count in words.items():
            out, i = [], 0
            while i < len(word):
                if i + 1 < len(word) and word[i] == a and word[i + 1] == b:
                    out.append(a + b)
                    i += 2
                else:
                    out.append(word[i])
                    i += 1
            merged[tuple(out)] += count
        words = merged
    specials = {name: len(ranks) + i for i, name in enumerate(SPECIAL_TOKENS)}
    return tiktoken.Encoding(name="rustbpe", pat_str=SPLIT_PATTERN, mergeable_ranks=ranks,
                             special_tokens=specials)


def default_config(generation: str, vocab_size: int) -> dict:
    """A small ``model_config`` whose sliding windows bind on short test sequences."""
    config = {"sequence_len": 64, "vocab_size": vocab_size, "n_layer": 2, "n_head": 4,
              "n_kv_head": 2, "n_embd": 32}
    if generation != "2025-10":
        config.update(n_layer=4, window_pattern="SSSL")
    if generation.startswith("2026-03"):
        config["sequence_len"] = 384  # short window = 128 (rounded up to 128) in both March generations
    return config


def random_model(config: dict, generation: str, *, seed: int = 0, vocab_rows: int | None = None):
    """A :class:`NanoChatGPT` with random weights large enough to give peaked logits."""
    import torch

    from .model import NanoChatGPT

    torch.manual_seed(seed)
    model = NanoChatGPT(config, GENERATIONS[generation], vocab_rows=vocab_rows)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("lambdas"):
                p.uniform_(0.1, 1.2) if name.startswith("resid") else p.uniform_(0.0, 0.3)
            elif name in ("smear_lambda", "backout_lambda"):
                p.fill_(0.5 if name == "smear_lambda" else 0.2)
            elif "wte" in name or "value_embeds" in name:
                p.normal_(0.0, 1.0)
            elif "ve_gate" in name or "smear_gate" in name:
                p.normal_(0.0, 0.5)
            else:
                p.normal_(0.0, p.shape[1] ** -0.5)
    return model


def write_tiny_checkpoint(folder: str | Path, *, generation: str = "2025-10", seed: int = 0,
                          step: int = 1, config: dict | None = None, pad_vocab: bool | None = None,
                          num_merges: int = 48, compiled_prefix: bool = False) -> Path:
    """Write a tiny random nanochat checkpoint of ``generation`` into ``folder``; return it.

    ``pad_vocab`` pads embedding rows to a multiple of 64 as nanochat does since Dec 2025
    (default: on for every generation after ``2025-10``). ``compiled_prefix`` writes keys
    with torch.compile's ``_orig_mod.`` prefix, as some upstream checkpoints have.
    """
    import torch

    if generation not in GENERATIONS:
        raise ValueError(f"unknown generation {generation!r}; known: {sorted(GENERATIONS)}")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    encoding = train_tiny_encoding(num_merges)
    config = dict(config or default_config(generation, encoding.n_vocab))
    config["vocab_size"] = encoding.n_vocab
    pad = (generation != "2025-10") if pad_vocab is None else pad_vocab
    rows = padded_vocab(config["vocab_size"]) if pad else config["vocab_size"]
    model = random_model(config, generation, seed=seed, vocab_rows=rows)
    state = {}
    for key, tensor in model.state_dict().items():
        # nanochat keeps its embedding tables in bf16; mimic that so loading must convert
        if key.startswith(("transformer.wte", "value_embeds")):
            tensor = tensor.to(torch.bfloat16)
        state[("_orig_mod." if compiled_prefix else "") + key] = tensor.clone()
    meta = {"step": step, "val_bpb": 3.0, "model_config": config,
            "user_config": {"depth": config["n_layer"], "note": f"tiny random {generation}"},
            "device_batch_size": 4, "max_seq_len": config["sequence_len"]}
    return save_nanochat_files(folder, state, meta, encoding, step=step)


def save_nanochat_files(folder: str | Path, state: dict, meta: dict, encoding, *, step: int) -> Path:
    """Write one step in nanochat's on-disk layout: ``model_<step>.pt``, ``meta_<step>.json``,
    ``tokenizer.pkl`` (nanochat's own format, a pickled tiktoken Encoding; the adapter reads it
    with a restricted unpickler) and ``token_bytes.pt``; returns the folder."""
    import torch

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    torch.save(state, folder / f"model_{step:06d}.pt")
    (folder / f"meta_{step:06d}.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    with open(folder / "tokenizer.pkl", "wb") as f:
        pickle.dump(encoding, f)
    special = {encoding.encode_single_token(name) for name in encoding.special_tokens_set}
    token_bytes = [0 if i in special else len(encoding.decode_single_token_bytes(i))
                   for i in range(encoding.n_vocab)]
    torch.save(torch.tensor(token_bytes, dtype=torch.int32), folder / "token_bytes.pt")
    return folder
