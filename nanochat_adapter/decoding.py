"""Greedy generation with nanochat models: batched with a KV cache, and the naive reference.

:func:`generate_greedy` left-pads the prompts of a batch, prefills them in one forward pass
and then decodes one token per step for all unfinished rows, reusing cached keys/values.
Finished rows are dropped from the batch. :func:`generate_naive` is how nanochat's own
``GPT.generate`` works (batch 1, whole sequence recomputed for every token); it is the
reference in tests and the baseline of ``benchmarks/bench_generate.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

#: ``stop(row, generated_ids) -> True`` ends that row (e.g. an ``until`` string appeared).
StopCheck = Callable[[int, list[int]], bool]


@torch.inference_mode()
def generate_naive(model, prompt: Sequence[int], max_new_tokens: int,
                   stop_token_ids: Sequence[int] = ()) -> list[int]:
    """Greedy tokens for one prompt, recomputing the full sequence at every step (no cache)."""
    ids = torch.tensor([list(prompt)], dtype=torch.long, device=model.device)
    out: list[int] = []
    for _ in range(max_new_tokens):
        token = int(model(ids)[0, -1].argmax())
        out.append(token)
        if token in stop_token_ids:
            break
        ids = torch.cat([ids, ids.new_tensor([[token]])], dim=1)
    return out


def left_pad(prompts: Sequence[Sequence[int]], pad_id: int = 0, device=None):
    """``(ids, valid)`` tensors ``(B, T)`` with each prompt right-aligned."""
    width = max(len(p) for p in prompts)
    ids = torch.full((len(prompts), width), pad_id, dtype=torch.long)
    valid = torch.zeros((len(prompts), width), dtype=torch.bool)
    for row, prompt in enumerate(prompts):
        if prompt:
            ids[row, width - len(prompt):] = torch.as_tensor(list(prompt), dtype=torch.long)
            valid[row, width - len(prompt):] = True
    return ids.to(device), valid.to(device)


#: Rows per prefill pass: the prompts' activations stay in the CPU caches (a whole large batch
#: at once is memory-bound); decoding then runs on all rows together.
PREFILL_ROWS = 8


def _prefill(model, ids: torch.Tensor, valid: torch.Tensor, capacity: int):
    """Fill a KV cache for a left-padded batch, ``PREFILL_ROWS`` rows at a time (CPU), or at once."""
    step = ids.shape[0] if ids.device.type != "cpu" else PREFILL_ROWS
    caches, logits = [], []
    for start in range(0, ids.shape[0], step):
        cache = model.new_cache(min(step, ids.shape[0] - start), capacity)
        logits.append(model(ids[start:start + step], valid=valid[start:start + step], cache=cache,
                            num_logits=1)[:, -1])
        caches.append(cache)
    cache = caches[0] if len(caches) == 1 else type(caches[0]).concat(caches)
    return cache, torch.cat(logits)


@torch.inference_mode()
def generate_greedy(model, prompts: Sequence[Sequence[int]], max_new_tokens: int, *,
                    stop_token_ids: Sequence[int] = (), stop: StopCheck | None = None) -> list[list[int]]:
    """Greedy continuation of every prompt, batched, with a KV cache.

    A row ends at ``max_new_tokens``, after emitting one of ``stop_token_ids`` (kept in its
    output) or when ``stop(row, tokens)`` says so. Returns the generated ids per prompt.
    """
    if any(len(p) == 0 for p in prompts):
        raise ValueError("every prompt needs at least one token (nanochat prompts start with <|bos|>)")
    outputs: list[list[int]] = [[] for _ in prompts]
    if not prompts or max_new_tokens <= 0:
        return outputs
    device = model.device
    ids, valid = left_pad(prompts, device=device)
    cache, logits = _prefill(model, ids, valid, ids.shape[1] + max_new_tokens)
    active = list(range(len(prompts)))  # original row index of each cache row
    stop_ids = set(int(t) for t in stop_token_ids)
    for step in range(max_new_tokens):
        next_tokens = logits.argmax(dim=-1)
        keep = []
        for cache_row, token in enumerate(next_tokens.tolist()):
            row = active[cache_row]
            outputs[row].append(token)
            finished = token in stop_ids or (stop is not None and stop(row, outputs[row]))
            if not finished:
                keep.append(cache_row)
        if not keep or step == max_new_tokens - 1:
            break
        if len(keep) < len(active):
            rows = torch.tensor(keep, device=device)
            cache.select_rows(rows)
            next_tokens = next_tokens[rows]
            active = [active[r] for r in keep]
        logits = model(next_tokens[:, None], cache=cache)[:, -1]
    return outputs
