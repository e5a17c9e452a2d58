"""The whole NQ generation suite through the ``nanochat`` lm-eval model, against the released approach.

A randomly initialised nanochat of a chosen shape (``--depth 32``: the d32 shape, width 2048,
16 heads, 65,536 vocab, 2,048 context; ``--depth 4``, the default, for a CPU) in the newest
architecture generation and in the October 2025 one is fed the NQ suite's request mix: the
closed-book prompt of each of the 3,610 released NQ questions and the oracle prompt of each of
the 2,389 supported ones, with a 200-word synthetic passage (see ``suite_workload.py``),
greedy, at most 64 new tokens, the tasks' stop strings. The requests go through the same code
path as ``lm_eval --model nanochat``: :class:`NanoChatLM.generate_until` over lm-eval
``Instance`` objects. Speed does not depend on trained weights, so no checkpoint is needed;
a random model rarely stops early, so every request generates the full 64 tokens (the worst
case for throughput).

The baseline is the released approach: one question at a time, no KV cache (the whole
sequence recomputed for every new token, as nanochat's ``GPT.generate``), timed on a few
questions of each kind and scaled to the suite. Both sides run in turn ``--repeats`` times;
the ``suite_speedup=`` line gives the median ratio of the suite's estimated time (min-max).
On a CPU, ``--sample`` runs a share of the suite (both prompt kinds in proportion) and scales
its time to the whole suite; the baseline's outputs are compared with the batched outputs of
the same questions (they must be identical).

The tokenizer is a stand-in (no nanochat tokenizer is needed): SmolLM2's 49k BPE merges with
nanochat's special tokens, padded to the model's 65,536 ids (``--tokenizer tiny``: the test
checkpoints' 48-merge BPE, whose prompts are about 3.5 times longer in tokens).

EXAMPLE (CPU, both generations: about 20 minutes of CPU time, longer on busy cores):
    python benchmarks/bench_suite.py --depth 4 --sample 0.1 --repeats 5 --naive-questions 3 --threads 1 --clock process
EXAMPLE (one GPU, the d32 shape, whole suite, one generation per run):
    python benchmarks/bench_suite.py --depth 32 --device cuda --generations 2026-03-14 --sample 1 --repeats 3 --naive-questions 6
"""

from __future__ import annotations

import argparse
import math
import os
import random
import resource
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from suite_workload import nq_suite_prompts, standin_tokenizer, task_generation_kwargs  # noqa: E402

NEWEST, OCT_2025 = "2026-03-14", "2025-10"


def d_shape(depth: int, generation: str) -> dict:
    """nanochat's ``model_config`` for ``--depth``: width 64·depth, 128-wide heads, 65k vocab."""
    width = 64 * depth
    heads = max(1, -(-width // 128))
    config = {"sequence_len": 2048, "vocab_size": 65536, "n_layer": depth, "n_head": heads,
              "n_kv_head": heads, "n_embd": width}
    if generation != OCT_2025:
        config["window_pattern"] = "SSSL"
    return config


def build_model(config: dict, generation: str, device: str, dtype: torch.dtype, seed: int):
    """A random :class:`NanoChatGPT`, initialised directly on ``device``."""
    from nanochat_adapter.tiny_checkpoints import random_model

    with torch.device(device):
        model = random_model(config, generation, seed=seed)
    model = model.to(dtype=dtype).eval()
    model.inv_freq = model.inv_freq.to(torch.float32)
    return model


def naive_answer(lm, text: str, gen_kwargs: dict) -> tuple[str, int]:
    """The released approach for one prompt: no cache, full recompute per token; (text, tokens)."""
    from nanochat_adapter.decoding import generate_naive

    until = list(gen_kwargs["until"])
    decode = lm.nanochat_tokenizer.decode
    tokens = generate_naive(lm.model, lm.tok_encode(text), int(gen_kwargs["max_gen_toks"]),
                            stop_token_ids=lm.stop_token_ids,
                            stop=lambda out: any(u in decode(out) for u in until))
    n = len(tokens)
    if tokens and tokens[-1] in lm.stop_token_ids:
        tokens = tokens[:-1]
    answer = decode(tokens)
    for u in until:
        answer = answer.split(u)[0]
    return answer, n


def peak_memory(device: str) -> str:
    if device.startswith("cuda"):
        return f"peak_gpu_memory={torch.cuda.max_memory_allocated() / 2**30:.2f}GiB"
    return f"peak_rss={resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20:.2f}GiB"


def sample_suite(prompts, fraction: float, seed: int):
    """``fraction`` of each prompt kind (at least one), in suite order."""
    rng = random.Random(seed)
    chosen = []
    for kind in ("closedbook", "oracle"):
        of_kind = [i for i, p in enumerate(prompts) if p.kind == kind]
        chosen += rng.sample(of_kind, max(1, min(len(of_kind), math.ceil(fraction * len(of_kind)))))
    return [prompts[i] for i in sorted(chosen)]


def bench_generation(args, generation: str, tokenizer, suite, sample, naive_sample, gen_kwargs) -> None:
    from lm_eval.api.instance import Instance

    from nanochat_adapter.checkpoint import resolve_dtype
    from nanochat_adapter.lm_eval_model import NanoChatLM

    dtype = resolve_dtype(args.dtype, args.device)
    config = d_shape(args.depth, generation)
    model = build_model(config, generation, args.device, dtype, args.seed)
    lm = NanoChatLM.from_model(model, tokenizer, device=args.device, batch_size=args.batch_size,
                               max_batch_size=args.max_batch_size, max_gen_toks=64,
                               name=f"random d{args.depth} {generation}")
    params = sum(p.numel() for p in model.parameters())
    print(f"== generation {generation}: depth {args.depth}, width {config['n_embd']}, {config['n_head']} heads, "
          f"vocab {config['vocab_size']}, context {config['sequence_len']}, {params / 1e6:.1f}M parameters; "
          f"{args.device} {str(dtype).removeprefix('torch.')}, batch_size {args.batch_size}", flush=True)
    instances = [Instance("generate_until", {}, (p.text, dict(gen_kwargs)), i) for i, p in enumerate(sample)]
    position = {id(p): i for i, p in enumerate(sample)}
    counts = {k: sum(p.kind == k for p in suite) for k in ("closedbook", "oracle")}
    scale = len(suite) / len(sample)

    lm.generate_until(instances[:4], disable_tqdm=True)  # warm-up (allocator, kernels, threads)
    naive_answer(lm, naive_sample[0].text, {**gen_kwargs, "max_gen_toks": 2})

    clock = time.process_time if args.clock == "process" else time.perf_counter
    ratios, times, naive_times = [], [], {"closedbook": [], "oracle": []}
    same = True
    for repeat in range(1, args.repeats + 1):
        if args.device.startswith("cuda"):
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        before = lm.generation_stats["generated_tokens"]
        start, wall_start = clock(), time.perf_counter()
        outputs = lm.generate_until(instances, disable_tqdm=not args.progress)
        if args.device.startswith("cuda"):
            torch.cuda.synchronize()
        took, wall = clock() - start, time.perf_counter() - wall_start
        generated = lm.generation_stats["generated_tokens"] - before
        times.append(took)
        memory = peak_memory(args.device)

        per_kind = {"closedbook": [], "oracle": []}
        for prompt in naive_sample:
            start = clock()
            answer, _ = naive_answer(lm, prompt.text, gen_kwargs)
            per_kind[prompt.kind].append(clock() - start)
            same &= answer == outputs[position[id(prompt)]]
        for kind, spent in per_kind.items():
            naive_times[kind] += spent
        naive_suite = sum(counts[k] * statistics.mean(t) for k, t in per_kind.items() if t)
        ratios.append(naive_suite / (took * scale))
        also_wall = f" ({wall:.1f} s wall)" if args.clock != "wall" else ""
        print(f"run {repeat}/{args.repeats}: {len(sample)} prompts in {took:.2f} s {args.clock}{also_wall}, "
              f"{len(sample) / took:.1f} generations/s, {generated / took:.0f} generated tokens/s, {memory}; "
              f"naive: {len(naive_sample)} questions in {sum(map(sum, per_kind.values())):.1f} s; "
              f"suite {took * scale:.1f} s vs naive {naive_suite:.0f} s: {ratios[-1]:.1f}x", flush=True)

    took = statistics.median(times) * scale
    naive_suite = sum(counts[k] * statistics.mean(t) for k, t in naive_times.items() if t)
    tokens_per_prompt = lm.generation_stats["generated_tokens"] / lm.generation_stats["prompts"]
    label = "whole suite" if len(sample) == len(suite) else f"{len(sample)} of {len(suite)} prompts run, scaled"
    print(f"suite_s={took:.1f} ({args.clock} clock, median; {label}) generations_per_s={len(suite) / took:.1f} "
          f"generated_tokens_per_s={len(suite) * tokens_per_prompt / took:.0f} {peak_memory(args.device)} "
          f"generation={generation}")
    print(f"naive_suite_s={naive_suite:.0f} (one question at a time, no KV cache; mean of "
          f"{len(naive_times['closedbook']) // args.repeats} closed-book and "
          f"{len(naive_times['oracle']) // args.repeats} oracle questions, times {counts['closedbook']} and "
          f"{counts['oracle']}) generation={generation}")
    print(f"naive outputs identical to the batched ones of those questions: {same}")
    print(f"suite_speedup={statistics.median(ratios):.1f} (min {min(ratios):.1f}, max {max(ratios):.1f}, "
          f"{len(ratios)} runs) generation={generation}", flush=True)
    del lm, model
    if args.device.startswith("cuda"):
        torch.cuda.empty_cache()


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     epilog=__doc__[__doc__.index("EXAMPLE"):],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--depth", type=int, default=4, help="nanochat depth (32 = the d32 shape)")
    parser.add_argument("--generations", nargs="+", default=[NEWEST, OCT_2025])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--dtype", default=None, help="default bf16 on CUDA, fp32 on CPU")
    parser.add_argument("--batch-size", default="auto", help="the nanochat model's batch_size (int or auto)")
    parser.add_argument("--max-batch-size", type=int, default=256)
    parser.add_argument("--sample", type=float, default=None,
                        help="share of the suite to run and scale from (default 1 on CUDA, 0.1 on CPU)")
    parser.add_argument("--naive-questions", type=int, default=6,
                        help="questions timed with the released approach per run (split by kind as the suite)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--tokenizer", choices=("smollm2", "tiny"), default="smollm2")
    parser.add_argument("--data-dir", default=os.environ.get("NANOKNOW_DATA_DIR"),
                        help="released NanoKnow files (default $NANOKNOW_DATA_DIR)")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (default torch's)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--clock", choices=("wall", "process"), default="wall",
                        help="wall: elapsed time; process: this process's CPU time (with --threads 1 on a CPU "
                             "shared with other jobs, the work done, unaffected by waiting for a core)")
    parser.add_argument("--progress", action="store_true", help="show the model's progress bars")
    args = parser.parse_args(argv)
    if not args.data_dir:
        parser.error("--data-dir or $NANOKNOW_DATA_DIR is needed (the released NQ questions)")
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.clock == "process" and args.device != "cpu":
        parser.error("--clock process measures CPU work; on an accelerator use --clock wall")
    if args.sample is None:
        args.sample = 1.0 if args.device.startswith("cuda") else 0.1

    tokenizer = standin_tokenizer(args.tokenizer)
    suite = nq_suite_prompts(Path(args.data_dir), seed=args.seed)
    sample = sample_suite(suite, args.sample, args.seed)
    gen_kwargs = task_generation_kwargs()
    share = {k: sum(p.kind == k for p in suite) / len(suite) for k in ("closedbook", "oracle")}
    n_closed = max(1, round(args.naive_questions * share["closedbook"]))
    rng = random.Random(args.seed + 1)
    naive_sample = (rng.sample([p for p in sample if p.kind == "closedbook"], n_closed)
                    + rng.sample([p for p in sample if p.kind == "oracle"], max(1, args.naive_questions - n_closed)))
    lengths = {k: [len(tokenizer.encode(p.text)) + 1 for p in suite if p.kind == k] for k in share}
    print(f"suite: {len(lengths['closedbook'])} closed-book + {len(lengths['oracle'])} oracle prompts "
          f"(mean {statistics.mean(lengths['closedbook']):.0f} / {statistics.mean(lengths['oracle']):.0f} tokens, "
          f"{tokenizer.source} tokenizer); generation_kwargs {gen_kwargs}; running {len(sample)} prompts "
          f"(sample {args.sample:g}); {torch.get_num_threads()} CPU threads; torch {torch.__version__}", flush=True)
    for generation in args.generations:
        bench_generation(args, generation, tokenizer, suite, sample, naive_sample, gen_kwargs)


if __name__ == "__main__":
    main()
