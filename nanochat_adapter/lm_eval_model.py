"""lm-eval model ``nanochat``: native nanochat checkpoints, batched KV-cache generation.

Registered lazily by :mod:`nanoknow_tasks.lm_eval_hook`, so plain
``lm_eval --model nanochat --model_args pretrained=karpathy/nanochat-d32`` finds it.

model_args: ``pretrained`` (folder or HF repo id), ``step`` (default latest), ``tokenizer``
(path to ``tokenizer.pkl``), ``revision``, ``device`` (cpu/cuda/mps; default cuda if present),
``dtype`` (default bf16 on CUDA, fp32 elsewhere), ``batch_size`` (int, ``auto``, ``auto:N``),
``max_batch_size``, ``max_length`` (default the checkpoint's ``sequence_len``),
``max_gen_toks`` (default 256), ``generation`` and ``softcap`` (override detection).

Design: prompts are left-padded (one KV cache, all rows decode in lock-step, finished rows
leave the batch); scoring is left-padded too, so only the continuation's logits are computed.
Text always starts with ``<|bos|>`` (nanochat's document start). With
``--apply_chat_template`` prompts are rendered as nanochat renders conversations, and
generation also stops at ``<|assistant_end|>``.
"""

from __future__ import annotations

import logging
import os
import re

import torch
import torch.nn.functional as F
from lm_eval.api.model import TemplateLM
from tqdm import tqdm

from .checkpoint import load_checkpoint
from .decoding import generate_greedy, left_pad
from .tokenizer import CHAT_TEMPLATE

log = logging.getLogger(__name__)

CPU_AUTO_BATCH_SIZE = 16


def _is_oom(err: BaseException) -> bool:
    return isinstance(err, torch.cuda.OutOfMemoryError) or "out of memory" in str(err).lower()


class NanoChatLM(TemplateLM):
    """lm-eval ``LM`` over a native nanochat checkpoint (see module docstring for args)."""

    def __init__(self, pretrained: str, step: int | str | None = None, tokenizer: str | None = None,
                 revision: str | None = None, device: str | None = None, dtype: str | None = None,
                 batch_size: int | str = 1, max_batch_size: int | str | None = 256,
                 max_length: int | str | None = None, max_gen_toks: int | str = 256,
                 generation: str | None = None, softcap: float | str | None = None, **kwargs):
        super().__init__()
        if kwargs:
            log.warning("nanochat: ignoring unknown model_args %s", sorted(kwargs))
        self._rank, self._world_size, self.accelerator = 0, 1, None
        device = self._setup_device(device)
        loaded = load_checkpoint(pretrained, step=None if step in (None, "") else int(step),
                                 tokenizer=tokenizer, device=str(device), dtype=dtype,
                                 generation=generation, revision=revision,
                                 softcap=None if softcap in (None, "") else float(softcap))
        self._device = torch.device(device)
        self.model, self.nanochat_tokenizer = loaded.model, loaded.tokenizer
        self.generation_name = loaded.generation.name
        self.pretrained = str(pretrained)
        self._max_length = int(max_length) if max_length else loaded.model.config["sequence_len"]
        self.max_gen_toks = int(max_gen_toks)
        self.max_batch_size = int(max_batch_size) if max_batch_size else 256
        text = str(batch_size)
        self.batch_size_auto = text.startswith("auto")
        self.batch_size = None if self.batch_size_auto else int(text)
        self._warned_sampling = False

    # -- devices and data parallel -------------------------------------------------------
    def _setup_device(self, device: str | None) -> str:
        """Pick the device; under ``accelerate launch`` each process takes its own GPU."""
        if int(os.environ.get("WORLD_SIZE", "1")) > 1:
            from accelerate import Accelerator

            accelerator = Accelerator()
            if accelerator.num_processes > 1:
                self.accelerator = accelerator
                self._rank = accelerator.process_index
                self._world_size = accelerator.num_processes
                log.info("nanochat: data parallel rank %d of %d on %s", self._rank,
                         self._world_size, accelerator.device)
                return str(accelerator.device)
        if device:
            if device.startswith("cuda") and not torch.cuda.is_available():
                from nanoknow_common.errors import NanoKnowInputError

                raise NanoKnowInputError(f"device {device!r} requested but CUDA is not available",
                                         field="device")
            return device
        if torch.cuda.is_available():
            return "cuda"
        if getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():
            return "mps"
        return "cpu"

    @property
    def rank(self) -> int:
        return self._rank

    @property
    def world_size(self) -> int:
        return self._world_size

    def all_gather(self, tensor):
        return tensor if self._world_size <= 1 else self.accelerator.gather(tensor)

    def gather_object(self, obj, dst=0):
        if self._world_size <= 1:
            return [obj]
        result = [None] * self._world_size if self._rank == dst else None
        torch.distributed.gather_object(obj=obj, object_gather_list=result, dst=dst)
        return result

    def barrier(self) -> None:
        if self._world_size > 1:
            self.accelerator.wait_for_everyone()

    # -- tokens ----------------------------------------------------------------------------
    @property
    def eot_token_id(self) -> int:
        return self.nanochat_tokenizer.assistant_end_id

    @property
    def prefix_token_id(self) -> int:
        return self.nanochat_tokenizer.bos_id

    @property
    def max_length(self) -> int:
        return self._max_length

    @property
    def stop_token_ids(self) -> tuple[int, ...]:
        """Generation ends at ``<|assistant_end|>`` and at ``<|bos|>`` (a new document)."""
        return (self.nanochat_tokenizer.assistant_end_id, self.nanochat_tokenizer.bos_id)

    def tok_encode(self, string: str, add_special_tokens: bool | None = None, **kwargs) -> list[int]:
        """Token ids; ``<|bos|>`` is prepended unless the text has it or ``add_special_tokens=False``."""
        ids = self.nanochat_tokenizer.encode(string)
        if add_special_tokens is not False and (not ids or ids[0] != self.prefix_token_id):
            ids = [self.prefix_token_id] + ids
        return ids

    def tok_decode(self, ids) -> str:
        return self.nanochat_tokenizer.decode(ids)

    # -- chat templating ---------------------------------------------------------------------
    @property
    def tokenizer_name(self) -> str:
        return "nanochat__" + re.sub(r"[^\w.-]+", "__", self.pretrained.strip("/"))

    def chat_template(self, chat_template: bool | str = False) -> str | None:
        return CHAT_TEMPLATE if chat_template else None

    def apply_chat_template(self, chat_history: list[dict[str, str]], add_generation_prompt: bool = True) -> str:
        """Render ``chat_history`` as nanochat renders conversations (see tokenizer.render_chat)."""
        return self.nanochat_tokenizer.render_chat(chat_history, add_generation_prompt=add_generation_prompt)

    # -- batching ----------------------------------------------------------------------------
    def _start_batch_size(self, longest: int) -> int:
        """Fixed ``batch_size``, or for ``auto`` an estimate from free accelerator memory."""
        if not self.batch_size_auto:
            return self.batch_size
        if self._device.type != "cuda":
            return min(CPU_AUTO_BATCH_SIZE, self.max_batch_size)
        free, _ = torch.cuda.mem_get_info(self._device)
        cfg = self.model.config
        width, item = cfg["n_embd"], torch.finfo(self.model.dtype).bits // 8
        head_dim = width // cfg["n_head"]
        kv = 2 * cfg["n_layer"] * cfg["n_kv_head"] * head_dim * item
        activations = 12 * width * item + cfg["n_head"] * longest * 4 + 4 * 2 * self.model.vocab_size
        per_row = longest * (kv + activations)
        size = max(1, min(self.max_batch_size, int(0.6 * free // max(per_row, 1))))
        log.info("nanochat: batch_size auto -> %d (longest %d tokens)", size, longest)
        return size

    def _batched(self, items: list, longest: int, run_batch, desc: str, disable: bool):
        """Run ``run_batch`` over ``items`` in batches; on out-of-memory halve the batch and retry."""
        size = self._start_batch_size(longest)
        results, start = [], 0
        bar = tqdm(total=len(items), desc=desc, disable=disable or self._rank != 0)
        while start < len(items):
            chunk = items[start:start + size]
            try:
                results.extend(run_batch(chunk))
            except (torch.cuda.OutOfMemoryError, RuntimeError) as err:
                if not _is_oom(err) or size == 1:
                    raise
                size = max(1, size // 2)
                log.warning("nanochat: out of memory, batch size -> %d", size)
                if torch.cuda.is_available():
                    torch.cuda.empty_cache()
                continue
            start += len(chunk)
            bar.update(len(chunk))
        bar.close()
        return results

    # -- scoring -------------------------------------------------------------------------------
    @torch.inference_mode()
    def _score_batch(self, pairs: list[tuple[list[int], list[int]]]) -> list[tuple[float, bool]]:
        """Sum of log-probabilities of each continuation and whether it is the greedy one."""
        inputs, targets = [], []
        for context, continuation in pairs:
            continuation = continuation[-self.max_length:]  # a longer one cannot be scored whole
            whole = (context + continuation)[-(self.max_length + 1):]
            inputs.append(whole[:-1])
            targets.append(continuation)
        ids, valid = left_pad(inputs, device=self._device)
        tail = max(len(t) for t in targets)
        logits = self.model(ids, valid=valid, num_logits=tail)
        logprobs = F.log_softmax(logits, dim=-1)
        out = []
        for row, target in enumerate(targets):
            lp = logprobs[row, tail - len(target):]
            target_t = torch.tensor(target, device=lp.device)
            greedy = bool((lp.argmax(-1) == target_t).all())
            out.append((float(lp.gather(-1, target_t[:, None]).sum()), greedy))
        return out

    def _loglikelihood_tokens(self, requests, disable_tqdm: bool = False, **kwargs) -> list[tuple[float, bool]]:
        order = sorted(range(len(requests)), key=lambda i: -len(requests[i][1]) - len(requests[i][2]))
        pairs = [(requests[i][1], requests[i][2]) for i in order]
        longest = min(self.max_length, max((len(a) + len(b) for a, b in pairs), default=1))
        scored = self._batched(pairs, longest, self._score_batch, "nanochat loglikelihood", disable_tqdm)
        results: list = [None] * len(requests)
        for i, value in zip(order, scored):
            results[i] = value
            if self.cache_hook is not None and requests[i][0] is not None:
                self.cache_hook.add_partial("loglikelihood", requests[i][0], value)
        return results

    def loglikelihood_rolling(self, requests, disable_tqdm: bool = False) -> list[float]:
        from lm_eval.utils import get_rolling_token_windows, make_disjoint_window

        windows, owner = [], []
        for index, request in enumerate(requests):
            (text,) = request.args
            tokens = self.tok_encode(text, add_special_tokens=False)
            for window in get_rolling_token_windows(tokens, prefix_token=self.prefix_token_id,
                                                    max_seq_len=self.max_length, context_len=1):
                windows.append((None,) + make_disjoint_window(window))
                owner.append(index)
        scores = self._loglikelihood_tokens(windows, disable_tqdm=disable_tqdm)
        totals = [0.0] * len(requests)
        for index, (logprob, _) in zip(owner, scores):
            totals[index] += logprob
        for request, total in zip(requests, totals):
            if self.cache_hook is not None:
                self.cache_hook.add_partial("loglikelihood_rolling", request.args, total)
        return totals

    # -- generation -----------------------------------------------------------------------------
    def _generation_settings(self, gen_kwargs: dict) -> tuple[list[str], int]:
        kwargs = dict(gen_kwargs or {})
        until = kwargs.pop("until", None) or []
        until = [until] if isinstance(until, str) else list(until)
        max_new = int(kwargs.pop("max_gen_toks", None) or kwargs.pop("max_new_tokens", None) or self.max_gen_toks)
        sampling = kwargs.pop("do_sample", False) or float(kwargs.pop("temperature", 0.0) or 0.0) > 0
        if sampling and not self._warned_sampling:
            log.warning("nanochat: sampling requested but this model decodes greedily")
            self._warned_sampling = True
        return until, max_new

    def generate_until(self, requests, disable_tqdm: bool = False) -> list[str]:
        jobs = []
        for request in requests:
            context, gen_kwargs = request.args
            until, max_new = self._generation_settings(gen_kwargs)
            prompt = self.tok_encode(context)
            budget = max(1, self.max_length - max_new)
            jobs.append((prompt[-budget:], until, max_new))
        order = sorted(range(len(jobs)), key=lambda i: -len(jobs[i][0]))
        sorted_jobs = [jobs[i] for i in order]
        longest = max((len(p) + n for p, _, n in sorted_jobs), default=1)
        texts = self._batched(sorted_jobs, longest, self._generate_batch, "nanochat generate_until", disable_tqdm)
        results: list = [None] * len(jobs)
        for i, text in zip(order, texts):
            results[i] = text
            if self.cache_hook is not None:
                self.cache_hook.add_partial("generate_until", requests[i].args, text)
        return results

    def _generate_batch(self, jobs) -> list[str]:
        tokenizer = self.nanochat_tokenizer

        def stop(row: int, tokens: list[int]) -> bool:
            _, until, max_new = jobs[row]
            if len(tokens) >= max_new:
                return True
            return bool(until) and any(u in tokenizer.decode(tokens) for u in until)

        outputs = generate_greedy(self.model, [p for p, _, _ in jobs], max(n for _, _, n in jobs),
                                  stop_token_ids=self.stop_token_ids, stop=stop)
        texts = []
        for (_, until, max_new), tokens in zip(jobs, outputs):
            tokens = tokens[:max_new]
            if tokens and tokens[-1] in self.stop_token_ids:
                tokens = tokens[:-1]
            text = tokenizer.decode(tokens)
            for u in until:
                if u:
                    text = text.split(u)[0]
            texts.append(text)
        return texts

