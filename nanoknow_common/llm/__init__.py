"""Interchangeable text-generation backends with one interface.

``make_backend(kind, model, **options)`` returns a :class:`~nanoknow_common.llm.base.TextGenerator`
whose ``generate(prompts, max_new_tokens=..., temperature=0.0) -> list[str]`` takes a list of
prompts, each either a plain string or a chat (list of ``{"role", "content"}`` messages), and
returns one completion per prompt, in order. Kinds:

* ``hf``: transformers on CPU or GPU, batched (loads GGUF files through ``gguf_file=``);
* ``openai``: any OpenAI-compatible chat-completions server (``vllm serve``, OpenAI...),
  concurrent requests with retries and exponential backoff;
* ``vllm``: offline batched generation (optional extra ``nanoknow[vllm]``, GPU).

Used by the projection's verifier and by the LLM-judge metric; nothing here is task specific.
"""

from __future__ import annotations

from nanoknow_common.llm.base import LLMBackendError, Prompt, TextGenerator

KINDS = ("hf", "openai", "vllm")


def make_backend(kind: str, model: str | None = None, **options) -> TextGenerator:
    """Build the backend ``kind`` (``hf``, ``openai`` or ``vllm``) for ``model``.

    Options are passed to the backend's constructor (see each module); ``None`` values are
    dropped so callers can forward optional CLI arguments as they are.
    """
    options = {k: v for k, v in options.items() if v is not None}
    if kind == "hf":
        from nanoknow_common.llm.hf_backend import HFBackend

        return HFBackend(model, **options)
    if kind == "openai":
        from nanoknow_common.llm.openai_backend import OpenAIBackend

        return OpenAIBackend(model, **options)
    if kind == "vllm":
        from nanoknow_common.llm.vllm_backend import VLLMBackend

        return VLLMBackend(model, **options)
    raise ValueError(f"unknown LLM backend {kind!r}; choose one of {', '.join(KINDS)}")


__all__ = ["KINDS", "LLMBackendError", "Prompt", "TextGenerator", "make_backend"]
