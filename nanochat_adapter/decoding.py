"""Greedy generation with nanochat models: batched with a KV cache, and the naive reference.

:func:`generate_greedy` left-pads the prompts of a batch, prefills them in one forward pass
and then decodes one token per step for all unfinished rows, reusing cached keys/values.
Finished rows are dropped from the batch. :func:`generate_continuous` does the same for any
number of prompts with continuous batching: a fixed number of cache rows, a finished row is
taken over by the next prompt (prefilled and placed right-aligned at the cache's current
length), so the batch stays full. :func:`generate_naive` is how nanochat's own
``GPT.generate`` works (batch 1, whole sequence recomputed for every token); it is the
reference in tests and the baseline of ``benchmarks/bench_generate.py`` and
``benchmarks/bench_suite.py``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence

import torch

from .model import KVCache

#: ``stop(row, generated_ids) -> True`` ends that row (e.g. an ``until`` string appeared).
StopCheck = Callable[[int, list[int]], bool]


@torch.inference_mode()
def generate_naive(model, prompt: Sequence[int], max_new_tokens: int,
                   stop_token_ids: Sequence[int] = (),
                   stop: Callable[[list[int]], bool] | None = None) -> list[int]:
    """Greedy tokens for one prompt, recomputing the full sequence at every step (no cache).

    Ends after a token of ``stop_token_ids`` (kept) or when ``stop(tokens)`` says so.
    """
    ids = torch.tensor([list(prompt)], dtype=torch.long, device=model.device)
    out: list[int] = []
    for _ in range(max_new_tokens):
        token = int(model(ids)[0, -1].argmax())
        out.append(token)
        if token in stop_token_ids or (stop is not None and stop(out)):
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


#: Continuous batching admits new prompts once 1/ADMIT_SHARE of the rows are free, so that
#: one prefill pass serves several rows while few rows idle.
ADMIT_SHARE = 8


def _prefill_next(model, prompts: Sequence[Sequence[int]]):
    """A KV cache prefilled with ``prompts`` (left-padded) and each row's first greedy token."""
    ids, valid = left_pad(prompts, device=model.device)
    step = ids.shape[0] if ids.device.type != "cpu" else PREFILL_ROWS
    caches, first = [], []
    for start in range(0, ids.shape[0], step):
        cache = model.new_cache(min(step, ids.shape[0] - start), ids.shape[1])
        first.append(model(ids[start:start + step], valid=valid[start:start + step], cache=cache,
                           num_logits=1, greedy=True)[:, -1])
        caches.append(cache)
    return (caches[0] if len(caches) == 1 else KVCache.concat(caches)), torch.cat(first)


@torch.inference_mode()
def generate_continuous(model, prompts: Sequence[Sequence[int]], max_new_tokens: int | Sequence[int], *,
                        batch_size: int, stop_token_ids: Sequence[int] = (), stop: StopCheck | None = None,
                        on_finish: Callable[[int, list[int]], None] | None = None,
                        capacity: int | None = None) -> list[list[int]]:
    """Greedy continuation of every prompt, ``batch_size`` rows at a time, continuously refilled.

    Prompts enter in the given order (give them longest first: a prompt joining a running
    batch must fit before the cache's current slot, else the cache is shifted). A row ends
    as in :func:`generate_greedy` (its ``max_new_tokens``, a token of ``stop_token_ids`` kept
    in its output, or ``stop(index, tokens)``); ``on_finish(index, tokens)`` is called then.
    ``capacity`` is the cache's initial number of slots (default: longest prompt + twice the
    most new tokens); the cache drops leading slots no live row uses, or grows, when full.
    Returns the generated ids per prompt, the same as :func:`generate_greedy` gives.
    """
    n = len(prompts)
    limits = [max_new_tokens] * n if isinstance(max_new_tokens, int) else [int(m) for m in max_new_tokens]
    if len(limits) != n:
        raise ValueError("max_new_tokens must be an int or one number per prompt")
    if any(len(p) == 0 for p in prompts):
        raise ValueError("every prompt needs at least one token (nanochat prompts start with <|bos|>)")
    outputs: list[list[int]] = [[] for _ in range(n)]
    queue = deque(i for i in range(n) if limits[i] > 0)
    for i in range(n):
        if limits[i] <= 0 and on_finish is not None:
            on_finish(i, outputs[i])
    if not queue:
        return outputs
    device = model.device
    rows = max(1, min(int(batch_size), len(queue)))
    most_new = max(limits)
    cache = model.new_cache(rows, capacity or max(len(prompts[i]) for i in queue) + 2 * most_new)
    owner: list[int | None] = [None] * rows  # prompt index per cache row, None: free
    next_ids = torch.zeros(rows, dtype=torch.long, device=device)
    stop_ids = set(int(t) for t in stop_token_ids)
    admit_at = max(1, rows // ADMIT_SHARE)

    def admit(free: list[int]) -> None:
        chosen = [queue.popleft() for _ in range(min(len(free), len(queue)))]
        free = free[:len(chosen)]
        width = max(len(prompts[i]) for i in chosen)
        if width > cache.length:  # not enough slots before the current one: shift right
            cache.reslot(pad=width - cache.length, capacity=max(cache.capacity, width + most_new))
        part, first = _prefill_next(model, [prompts[i] for i in chosen])
        index = torch.tensor(free, device=device)
        cache.put_rows(index, part)
        next_ids[index] = first
        for row, i in zip(free, chosen):
            owner[row] = i

    def make_room() -> None:
        if cache.length < cache.capacity:
            return
        live = [r for r, i in enumerate(owner) if i is not None]
        used = cache.valid[live, :cache.length].any(0)
        unused = int(used.int().argmax()) if bool(used.any()) else cache.length
        cache.reslot(drop=unused, capacity=cache.capacity + (most_new if unused == 0 else 0))

    while True:
        free = [r for r, i in enumerate(owner) if i is None]
        if queue and free and (len(free) >= admit_at or len(free) >= len(queue) or len(free) == len(owner)):
            admit(free)
        if all(i is None for i in owner):
            return outputs
        tokens = next_ids.tolist()
        for row, i in enumerate(owner):
            if i is None:
                continue
            outputs[i].append(tokens[row])
            if (tokens[row] in stop_ids or len(outputs[i]) >= limits[i]
                    or (stop is not None and stop(i, outputs[i]))):
                owner[row] = None
                if on_finish is not None:
                    on_finish(i, outputs[i])
        live = [r for r, i in enumerate(owner) if i is not None]
        if not live:
            continue
        if not queue and len(owner) - len(live) >= max(1, len(owner) // 4):
            # nothing left to admit: drop the free rows instead of computing them
            index = torch.tensor(live, device=device)
            cache.select_rows(index)
            next_ids = next_ids[index]
            owner = [owner[r] for r in live]
        make_room()
        next_ids = model(next_ids[:, None], cache=cache, greedy=True)[:, -1]
