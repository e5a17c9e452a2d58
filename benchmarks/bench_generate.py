"""Greedy generation speed of nanochat models: naive streaming vs KV cache vs batched KV cache.

A random nanochat model (default 4 layers, width 256, vocab 8192) generates 64 tokens for
64 prompts of about 300 tokens on the CPU, three ways:

(a) naive: batch 1, no KV cache, whole sequence recomputed for every token (how nanochat's
    own ``GPT.generate`` and the released NanoKnow evaluation script work);
(b) our KV-cache path with batch 1;
(c) our batched KV-cache path (all prompts at once, left-padded).

(a) and (b) are timed on a subset of prompts (their speed does not depend on how many prompts
there are); all three must produce the same tokens on that subset. Prints tokens/s and ratios;
the last line is ``speedup_vs_naive=<(c)/(a)>``.

    python benchmarks/bench_generate.py [--threads N] [--prompts 64] [--new-tokens 64]
"""

from __future__ import annotations

import argparse
import random
import time

import torch

from nanochat_adapter.decoding import generate_greedy, generate_naive
from nanochat_adapter.tiny_checkpoints import random_model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--vocab", type=int, default=8192)
    parser.add_argument("--generation", default="2025-10")
    parser.add_argument("--prompts", type=int, default=64)
    parser.add_argument("--prompt-tokens", type=int, default=300)
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--naive-prompts", type=int, default=4, help="prompts timed for (a)")
    parser.add_argument("--single-prompts", type=int, default=8, help="prompts timed for (b)")
    parser.add_argument("--threads", type=int, default=None,
                        help="torch threads (default: torch's, one per core; use 1 when other jobs share the "
                             "cores, since oversubscribed OpenMP threads stall)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    if args.threads:
        torch.set_num_threads(args.threads)
    args.threads = torch.get_num_threads()
    config = {"sequence_len": 2048, "vocab_size": args.vocab, "n_layer": args.layers, "n_head": args.heads,
              "n_kv_head": args.heads, "n_embd": args.width}
    if args.generation != "2025-10":
        config["window_pattern"] = "SSSL"
    model = random_model(config, args.generation, seed=args.seed).eval()
    rng = random.Random(args.seed)
    prompts = [[rng.randrange(args.vocab) for _ in range(args.prompt_tokens + rng.randint(-20, 20))]
               for _ in range(args.prompts)]
    n_new = args.new_tokens
    print(f"model: {args.generation}, {args.layers} layers, width {args.width}, vocab {args.vocab}; "
          f"{args.prompts} prompts of ~{args.prompt_tokens} tokens, {n_new} new tokens; "
          f"{args.threads} threads")

    generate_greedy(model, prompts[:2], 4)  # warm-up

    start = time.perf_counter()
    naive = [generate_naive(model, p, n_new) for p in prompts[:args.naive_prompts]]
    naive_rate = args.naive_prompts * n_new / (time.perf_counter() - start)

    start = time.perf_counter()
    single = [generate_greedy(model, [p], n_new)[0] for p in prompts[:args.single_prompts]]
    single_rate = args.single_prompts * n_new / (time.perf_counter() - start)

    start = time.perf_counter()
    batched = generate_greedy(model, prompts, n_new)
    batched_rate = args.prompts * n_new / (time.perf_counter() - start)

    same = naive == single[:args.naive_prompts] == batched[:args.naive_prompts] \
        and single == batched[:args.single_prompts]
    print(f"(a) naive, batch 1, no cache : {naive_rate:9.1f} tokens/s  ({args.naive_prompts} prompts)")
    print(f"(b) KV cache, batch 1        : {single_rate:9.1f} tokens/s  ({args.single_prompts} prompts)")
    print(f"(c) KV cache, batch {args.prompts:<3d}      : {batched_rate:9.1f} tokens/s  ({args.prompts} prompts)")
    print(f"(b)/(a) = {single_rate / naive_rate:.1f}   (c)/(b) = {batched_rate / single_rate:.1f}")
    print(f"identical tokens across (a), (b), (c): {same}")
    print(f"speedup_vs_naive={batched_rate / naive_rate:.1f}")


if __name__ == "__main__":
    main()
