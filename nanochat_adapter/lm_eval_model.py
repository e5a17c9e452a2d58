"""lm-eval model ``nanochat``: native nanochat checkpoints, batched KV-cache generation.

Registered lazily by :mod:`nanoknow_tasks.lm_eval_hook`, so plain
``lm_eval --model nanochat --model_args pretrained=karpathy/nanochat-d32`` finds it.

model_args: ``pretrained`` (folder or HF repo id), ``step`` (default latest), ``tokenizer``
(path to ``tokenizer.pkl``), ``revision``, ``device`` (cpu/cuda/mps; default cuda if present),
``dtype`` (default bf16 on CUDA, fp32 elsewhere), ``batch_size`` (int, ``auto``, ``auto:N``),
``max_batch_size``, ``max_length`` (default the checkpoint's ``sequence_len``),
``max_gen_toks`` (default 256), ``generation`` and ``softcap`` (override detection),
``truncation`` (``left``, the default: a prompt longer than the context budget keeps its last
``max_length - max_gen_toks`` tokens and one WARNING per request type says how many were cut;
``error``: refuse such prompts instead).

Devices: without ``device`` the best present one is used (cuda, then mps, then cpu). The
``lm_eval`` CLI always passes a device: ``cuda:0`` when the user gave no ``--device`` (the
default of lm-eval's ``EvaluatorConfig``). That value alone cannot tell a default from a typed
``--device cuda:0``, so the command line is read as well: ``cuda:0`` with no ``--device`` on it
falls back to mps/cpu with one INFO line when CUDA is absent (as lm-eval's ``hf`` model does);
any device the user named (``--device cuda``, ``--device cuda:0``, ``device=`` in model_args,
``simple_evaluate(device=...)``) must exist, else a clear error. (A ``device:`` line in an
``lm_eval --config`` YAML file looks like the default and falls back too.)

Design: generation sorts the prompts longest first and runs them with continuous batching
(``generation.generate_continuous``): ``batch_size`` rows share one KV cache and decode in
lock-step; a finished row is taken over by the next prompt, so the batch stays full. Outputs
are the same as one request at a time. ``batch_size=auto`` sizes the batch from free memory
(GPU memory on CUDA, RAM on a CPU, at most 64 rows there); on out-of-memory accelerate's
``find_executable_batch_size`` halves it and the requests not yet finished run again. Scoring
is left-padded too, so only the continuation's logits are computed.
Text always starts with ``<|bos|>`` (nanochat's document start). With
``--apply_chat_template`` prompts are rendered as nanochat renders conversations, and
generation also stops at ``<|assistant_end|>``.
"""

from __future__ import annotations

import logging
import os
import re
import sys

import torch
import torch.nn.functional as F
from lm_eval.api.model import TemplateLM
from tqdm import tqdm

from nanoknow_common.errors import NanoKnowInputError

from .checkpoint import load_checkpoint
from .decoding import generate_continuous, left_pad
from .tokenizer import CHAT_TEMPLATE

# A child of lm-eval's logger: the ``lm_eval`` CLI shows its INFO lines (device fallback,
# batch sizes) next to lm-eval's own; a module-named logger would only show WARNINGs there.
log = logging.getLogger("lm_eval.models.nanochat")

CPU_AUTO_BATCH_SIZE = 64
TRUNCATION_MODES = ("left", "error")


def whole_number_arg(name: str, value, *, minimum: int = 0) -> int | None:
    """A model_arg that must be a whole number (``None``/empty stays None); clear error otherwise."""
    if value is None or value == "":
        return None
    number = None
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, float) and value.is_integer():
        number = int(value)
    elif isinstance(value, str) and re.fullmatch(r"\s*[+-]?\d+\s*", value):
        number = int(value)
    if number is None:
        raise NanoKnowInputError(f"must be a whole number, got {value!r}", field=f"model_args {name}")
    if number < minimum:
        raise NanoKnowInputError(f"must be at least {minimum}, got {number}", field=f"model_args {name}")
    return number


def _float_arg(name: str, value) -> float | None:
    if value is None or value == "":
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        raise NanoKnowInputError(f"must be a number, got {value!r}", field=f"model_args {name}") from None


def lm_eval_default_device() -> str:
    """The device the ``lm_eval`` CLI passes when the user gave no ``--device``."""
    try:
        from dataclasses import fields

        from lm_eval.config.evaluate_config import EvaluatorConfig

        return next(f.default for f in fields(EvaluatorConfig) if f.name == "device")
    except Exception:  # another lm-eval layout: its documented default
        return "cuda:0"


def device_typed_on_command_line(argv: list[str] | None = None) -> bool:
    """Whether ``--device`` appears on this process's command line (the lm_eval CLI's flag)."""
    argv = sys.argv[1:] if argv is None else argv
    return any(a == "--device" or a.startswith("--device=") for a in argv)


def _mps_available() -> bool:
    return bool(getattr(torch.backends, "mps", None) and torch.backends.mps.is_available())


def choose_device(device: str | None, *, argv: list[str] | None = None) -> str:
    """The device to run on (see the module docstring for how lm-eval's default is told apart)."""
    if not device:
        return "cuda" if torch.cuda.is_available() else "mps" if _mps_available() else "cpu"
    device = str(device).strip()
    if (device == lm_eval_default_device() and not device_typed_on_command_line(argv)
            and not torch.cuda.is_available()):
        fallback = "mps" if _mps_available() else "cpu"
        log.info("nanochat: CUDA is not available; using %s instead of lm-eval's default device %s "
                 "(pass --device to choose)", fallback, device)
        return fallback
    try:
        parsed = torch.device(device)
    except (RuntimeError, ValueError):
        raise NanoKnowInputError(f"unknown device {device!r} (use cpu, cuda, cuda:N or mps)",
                                 field="device") from None
    if parsed.type == "cuda":
        if not torch.cuda.is_available():
            raise NanoKnowInputError(
                f"{device!r} requested but CUDA is not available on this machine (torch "
                f"{torch.__version__}, {'built without CUDA' if torch.version.cuda is None else 'no GPU visible'}); "
                "use --device cpu, or leave --device out to use what is present", field="device")
        if parsed.index is not None and parsed.index >= torch.cuda.device_count():
            raise NanoKnowInputError(f"{device!r} requested but only {torch.cuda.device_count()} CUDA "
                                     "device(s) are visible", field="device")
    elif parsed.type == "mps" and not _mps_available():
        raise NanoKnowInputError(f"{device!r} requested but MPS is not available on this machine",
                                 field="device")
    return device


def _running_lm_eval_cli() -> bool:
    main_spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    program = os.path.basename(sys.argv[0]) if sys.argv else ""
    return program in ("lm_eval", "lm-eval") or getattr(main_spec, "name", "") == "lm_eval.__main__"


def install_one_line_input_errors() -> None:
    """Under the ``lm_eval`` CLI, print an uncaught :class:`NanoKnowInputError` as one line.

    Bad model_args (``step=abc``), a missing device or a prompt refused by ``truncation=error``
    are the user's to fix, not bugs: a traceback through lm-eval's internals would hide the
    reason. The process still exits non-zero (1, Python's code for an uncaught exception).
    ``NANOKNOW_TRACEBACK=1`` keeps the full traceback.
    """
    previous = sys.excepthook
    if getattr(previous, "_nanoknow_one_line", False):
        return

    def hook(exc_type, exc, tb):
        if issubclass(exc_type, NanoKnowInputError) and os.environ.get("NANOKNOW_TRACEBACK", "0") in ("", "0"):
            sys.stderr.write(f"lm_eval: error: {exc}\n")
            return
        previous(exc_type, exc, tb)

    hook._nanoknow_one_line = True
    sys.excepthook = hook


if _running_lm_eval_cli():
    install_one_line_input_errors()


class NanoChatLM(TemplateLM):
    """lm-eval ``LM`` over a native nanochat checkpoint (see module docstring for args)."""

    def __init__(self, pretrained: str, step: int | str | None = None, tokenizer: str | None = None,
                 revision: str | None = None, device: str | None = None, dtype: str | None = None,
                 batch_size: int | str = 1, max_batch_size: int | str | None = 256,
                 max_length: int | str | None = None, max_gen_toks: int | str = 256,
                 generation: str | None = None, softcap: float | str | None = None,
                 truncation: str = "left", **kwargs):
        super().__init__()
        if kwargs:
            log.warning("nanochat: ignoring unknown model_args %s", sorted(kwargs))
        # every argument is checked before the (possibly large) checkpoint is read
        step = whole_number_arg("step", step)
        softcap = _float_arg("softcap", softcap)
        settings = self._parse_settings(batch_size=batch_size, max_batch_size=max_batch_size,
                                        max_length=max_length, max_gen_toks=max_gen_toks,
                                        truncation=truncation)
        self._rank, self._world_size, self.accelerator = 0, 1, None
        device = self._setup_device(device)
        loaded = load_checkpoint(pretrained, step=step, tokenizer=tokenizer, device=str(device),
                                 dtype=dtype, generation=generation, revision=revision, softcap=softcap)
        self._configure(loaded.model, loaded.tokenizer, device=device, name=str(pretrained), **settings)

    @classmethod
    def from_model(cls, model, tokenizer, *, device: str | None = None, name: str = "in-memory",
                   batch_size: int | str = 1, max_batch_size: int | str | None = 256,
                   max_length: int | str | None = None, max_gen_toks: int | str = 256,
                   truncation: str = "left") -> "NanoChatLM":
        """The lm-eval model over an already built :class:`NanoChatGPT` and tokenizer (benchmarks)."""
        self = cls.__new__(cls)
        TemplateLM.__init__(self)
        settings = cls._parse_settings(batch_size=batch_size, max_batch_size=max_batch_size,
                                       max_length=max_length, max_gen_toks=max_gen_toks,
                                       truncation=truncation)
        self._rank, self._world_size, self.accelerator = 0, 1, None
        self._configure(model, tokenizer, device=device or str(model.device), name=name, **settings)
        return self

    @staticmethod
    def _parse_settings(*, batch_size, max_batch_size, max_length, max_gen_toks, truncation) -> dict:
        text = str(batch_size).strip().lower()
        auto = text.startswith("auto")
        if not re.fullmatch(r"auto|auto:\d+|[+-]?\d+(\.0*)?", text):
            raise NanoKnowInputError(f"must be a whole number, auto or auto:N, got {batch_size!r}",
                                     field="model_args batch_size")
        mode = str(truncation or "left").strip().lower()
        if mode not in TRUNCATION_MODES:
            raise NanoKnowInputError(f"must be one of {', '.join(TRUNCATION_MODES)}, got {truncation!r}",
                                     field="model_args truncation")
        return {"batch_size": None if auto else whole_number_arg("batch_size", batch_size, minimum=1),
                "batch_size_auto": auto,
                "max_batch_size": whole_number_arg("max_batch_size", max_batch_size, minimum=1) or 256,
                "max_length": whole_number_arg("max_length", max_length, minimum=2),
                "max_gen_toks": whole_number_arg("max_gen_toks", max_gen_toks, minimum=1) or 256,
                "truncation": mode}

    def _configure(self, model, tokenizer, *, device, name, batch_size, batch_size_auto, max_batch_size,
                   max_length, max_gen_toks, truncation) -> None:
        self._device = torch.device(device)
        self.model, self.nanochat_tokenizer = model, tokenizer
        self.generation_name = model.generation.name
        self.pretrained = name
        self._max_length = max_length or model.config["sequence_len"]
        self.max_gen_toks = max_gen_toks
        self.max_batch_size = max_batch_size
        self.batch_size_auto, self.batch_size = batch_size_auto, batch_size
        self.truncation = truncation
        self._warned_sampling = False
        #: running totals of generate_until: prompts, their tokens, generated tokens, truncated prompts
        self.generation_stats = {"prompts": 0, "prompt_tokens": 0, "generated_tokens": 0, "truncated": 0}

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
        return choose_device(device)

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
    def _start_batch_size(self, tokens_per_row: int, logits_per_row: int = 1) -> int:
        """Fixed ``batch_size``, or for ``auto`` an estimate from free memory.

        A row needs ``tokens_per_row`` slots of KV cache for every layer, the activations of its
        prefill (``12 * width`` values a token, attention scores) and ``logits_per_row`` rows of
        fp32 logits. CUDA uses 60% of the free GPU memory (up to ``max_batch_size``); a CPU 30% of
        the available RAM and at most ``CPU_AUTO_BATCH_SIZE`` rows (beyond that a CPU gains little:
        the matrix products are already compute-bound).
        """
        if not self.batch_size_auto:
            return self.batch_size
        cfg = self.model.config
        width, item = cfg["n_embd"], torch.finfo(self.model.dtype).bits // 8
        head_dim = width // cfg["n_head"]
        kv = 2 * cfg["n_layer"] * cfg["n_kv_head"] * head_dim * item
        per_token = kv + 12 * width * item + cfg["n_head"] * tokens_per_row * 4
        per_row = tokens_per_row * per_token + 3 * 4 * logits_per_row * self.model.vocab_size
        if self._device.type == "cuda":
            free, _ = torch.cuda.mem_get_info(self._device)
            share, cap = 0.6, self.max_batch_size
        else:
            import psutil

            free = psutil.virtual_memory().available
            share, cap = 0.3, min(CPU_AUTO_BATCH_SIZE, self.max_batch_size)
        size = max(1, min(cap, int(share * free // max(per_row, 1))))
        log.info("nanochat: batch_size auto -> %d (rows of %d tokens, %.0f MiB free)", size, tokens_per_row,
                 free / 2**20)
        return size

    def _with_oom_retry(self, run, tokens_per_row: int, logits_per_row: int = 1) -> None:
        """Call ``run(batch_size)`` until it completes, halving the batch size on out-of-memory.

        accelerate's ``find_executable_batch_size`` does the retrying; ``run`` must resume (skip
        what an earlier, failed call finished), so only the rows in flight are computed again.
        """
        from accelerate.utils import find_executable_batch_size

        size = self._start_batch_size(tokens_per_row, logits_per_row)

        def halve() -> int:
            nonlocal size
            size //= 2
            log.warning("nanochat: out of memory, batch size -> %d", size)
            return size

        find_executable_batch_size(run, starting_batch_size=size, reduce_batch_size_fn=halve)()

    def _batched(self, items: list, longest: int, run_batch, desc: str, disable: bool, logits_per_row: int = 1):
        """``run_batch`` over ``items`` in batches (halved on out-of-memory); results in order."""
        results: list = []
        bar = tqdm(total=len(items), desc=desc, disable=disable or self._rank != 0)

        def run(batch_size: int) -> None:
            while len(results) < len(items):
                chunk = items[len(results):len(results) + batch_size]
                results.extend(run_batch(chunk))
                bar.update(len(chunk))

        self._with_oom_retry(run, longest, logits_per_row)
        bar.close()
        return results

    # -- context budget ----------------------------------------------------------------------------
    def _check_budget(self, request_type: str, lengths: list[int], budgets: list[int]) -> None:
        """Warn once about (or, with ``truncation=error``, refuse) prompts over their token budget."""
        over = [(n, b) for n, b in zip(lengths, budgets) if n > b]
        if not over:
            return
        longest, budget = max(over)
        detail = f"max_length {self.max_length}"
        if request_type == "generate_until":
            detail += f" - max_gen_toks {self.max_length - budget}"
        if self.truncation == "error":
            raise NanoKnowInputError(
                f"{len(over)} of {len(lengths)} {request_type} prompts do not fit the context: the longest "
                f"has {longest} tokens, the budget is {budget} ({detail}); shorten the prompts or lower "
                "max_gen_toks, or pass truncation=left to drop their beginning", field="model_args truncation")
        log.warning("nanochat: %d of %d %s prompts were longer than the context budget and lost their "
                    "beginning (left truncation): longest prompt %d tokens, budget %d tokens (%s); "
                    "pass truncation=error in --model_args to refuse them instead",
                    len(over), len(lengths), request_type, longest, budget, detail)

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
        # the model reads context + continuation but its last token (rolling windows always fit)
        self._check_budget("loglikelihood", [len(r[1]) + len(r[2]) - 1 for r in requests],
                           [self.max_length] * len(requests))
        order = sorted(range(len(requests)), key=lambda i: -len(requests[i][1]) - len(requests[i][2]))
        pairs = [(requests[i][1], requests[i][2]) for i in order]
        longest = min(self.max_length, max((len(a) + len(b) for a, b in pairs), default=1))
        tail = min(self.max_length, max((len(b) for _, b in pairs), default=1))
        scored = self._batched(pairs, longest, self._score_batch, "nanochat loglikelihood", disable_tqdm, tail)
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
        jobs, lengths, budgets = [], [], []
        for request in requests:
            context, gen_kwargs = request.args
            until, max_new = self._generation_settings(gen_kwargs)
            prompt = self.tok_encode(context)
            budget = max(1, self.max_length - max_new)
            lengths.append(len(prompt))
            budgets.append(budget)
            jobs.append((prompt[-budget:], until, max_new))
        self._check_budget("generate_until", lengths, budgets)
        self.generation_stats["prompts"] += len(jobs)
        self.generation_stats["prompt_tokens"] += sum(len(p) for p, _, _ in jobs)
        self.generation_stats["truncated"] += sum(n > b for n, b in zip(lengths, budgets))
        if not jobs:
            return []
        # longest first: similar lengths share the cache, and a prompt joining a running batch
        # fits before the cache's current slot (see generation.generate_continuous)
        order = sorted(range(len(jobs)), key=lambda i: -len(jobs[i][0]))
        results: list = [None] * len(jobs)
        done = [False] * len(jobs)
        bar = tqdm(total=len(jobs), desc="nanochat generate_until", disable=disable_tqdm or self._rank != 0)

        def finish(index: int, tokens: list[int]) -> None:
            results[index] = self._answer_text(tokens, jobs[index])
            done[index] = True
            if self.cache_hook is not None:
                self.cache_hook.add_partial("generate_until", requests[index].args, results[index])
            bar.update(1)

        def run(batch_size: int) -> None:
            todo = [i for i in order if not done[i]]
            generate_continuous(self.model, [jobs[i][0] for i in todo], [jobs[i][2] for i in todo],
                                batch_size=batch_size, stop_token_ids=self.stop_token_ids,
                                stop=lambda k, tokens: self._stop_string_hit(jobs[todo[k]][1], tokens),
                                on_finish=lambda k, tokens: finish(todo[k], tokens))

        capacity = max(len(p) for p, _, _ in jobs) + 2 * max(n for _, _, n in jobs)
        self._with_oom_retry(run, capacity)
        bar.close()
        return results

    def _stop_string_hit(self, until: list[str], tokens: list[int]) -> bool:
        """Whether an ``until`` string appears in the text of ``tokens`` (checked as each one is added).

        A string that was not there before the newest token must overlap it; every token holds
        at least one byte, so it lies within the text of the last ``len(string in bytes)`` tokens.
        Decoding only those keeps the check cheap whatever the length of the answer.
        """
        decode = self.nanochat_tokenizer.decode
        return any(u and u in decode(tokens[-len(u.encode("utf-8")):]) for u in until)

    def _answer_text(self, tokens: list[int], job) -> str:
        """The answer of one request: its tokens less a final stop token, cut at an ``until`` string."""
        _, until, max_new = job
        tokens = tokens[:max_new]
        self.generation_stats["generated_tokens"] += len(tokens)
        if tokens and tokens[-1] in self.stop_token_ids:
            tokens = tokens[:-1]
        text = self.nanochat_tokenizer.decode(tokens)
        for u in until:
            if u:
                text = text.split(u)[0]
        return text
