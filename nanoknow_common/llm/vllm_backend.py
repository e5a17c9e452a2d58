"""``vllm`` backend: offline batched generation on a GPU (optional extra ``nanoknow[vllm]``).

vLLM is imported only when this backend is built; nothing in the test-suite needs it.
"""

from __future__ import annotations

import os

from nanoknow_common.llm.base import LLMBackendError, Prompt, TextGenerator, render_chat


class VLLMBackend(TextGenerator):
    """``vllm.LLM`` over ``model``; chats are rendered with the model's chat template."""

    name = "vllm"

    def __init__(self, model: str, *, dtype: str = "bfloat16", gpu_memory_utilization: float = 0.9,
                 max_model_len: int | None = None, tensor_parallel_size: int = 1,
                 trust_remote_code: bool = False, **extra):
        try:
            from vllm import LLM, SamplingParams
        except ImportError as err:
            raise LLMBackendError("the vllm backend needs vLLM and a GPU: pip install 'nanoknow[vllm]'") from err
        os.environ.setdefault("VLLM_WORKER_MULTIPROC_METHOD", "spawn")
        kwargs = dict(model=model, dtype=dtype, gpu_memory_utilization=gpu_memory_utilization,
                      tensor_parallel_size=tensor_parallel_size, trust_remote_code=trust_remote_code, **extra)
        if max_model_len:
            kwargs["max_model_len"] = max_model_len
        self.llm = LLM(**kwargs)
        self.tokenizer = self.llm.get_tokenizer()
        self._sampling = SamplingParams

    def _render(self, prompt: Prompt) -> str:
        return render_chat(self.tokenizer, prompt)

    def generate(self, prompts: list[Prompt], *, max_new_tokens: int = 64, temperature: float = 0.0) -> list[str]:
        params = self._sampling(temperature=temperature, max_tokens=max_new_tokens, skip_special_tokens=True)
        outputs = self.llm.generate([self._render(p) for p in prompts], params)
        return [o.outputs[0].text for o in outputs]
