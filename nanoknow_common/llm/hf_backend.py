"""``hf`` backend: transformers generation, batched with left padding (CPU is fine for small models)."""

from __future__ import annotations

import logging

from nanoknow_common.llm.base import LLMBackendError, Prompt, TextGenerator, render_chat

log = logging.getLogger(__name__)


class HFBackend(TextGenerator):
    """A causal LM from a folder or Hub id; ``gguf_file`` loads a GGUF checkpoint in that folder.

    Plain-string prompts are used as they are; chats go through the tokenizer's chat template
    (with ``enable_thinking=False`` where the template knows it). Prompts are batched
    ``batch_size`` at a time, longest first, so the same list always gives the same batches.
    """

    name = "hf"

    def __init__(self, model: str, *, gguf_file: str | None = None, device: str = "cpu",
                 dtype: str = "float32", batch_size: int = 8, trust_remote_code: bool = False,
                 progress: bool = True):
        if not model:
            raise LLMBackendError("the hf backend needs a model (folder or Hub id)")
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        kwargs = {"trust_remote_code": trust_remote_code}
        if gguf_file:
            kwargs["gguf_file"] = gguf_file
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(model, **kwargs)
            self.model = AutoModelForCausalLM.from_pretrained(model, dtype=getattr(torch, dtype), **kwargs)
        except (OSError, ValueError) as err:
            raise LLMBackendError(f"cannot load model {model!r}: {err}") from err
        self.model.to(device).eval()
        self.device = device
        self.batch_size = max(1, int(batch_size))
        self.progress = progress
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self._torch = torch

    def _render(self, prompt: Prompt) -> str:
        return render_chat(self.tokenizer, prompt)

    def generate(self, prompts: list[Prompt], *, max_new_tokens: int = 64, temperature: float = 0.0) -> list[str]:
        from tqdm import tqdm

        texts = [self._render(p) for p in prompts]
        lengths = [len(self.tokenizer(t, add_special_tokens=False)["input_ids"]) for t in texts]
        order = sorted(range(len(texts)), key=lambda i: (-lengths[i], i))
        outputs: list[str] = [""] * len(texts)
        batches = [order[i:i + self.batch_size] for i in range(0, len(order), self.batch_size)]
        for batch in tqdm(batches, desc="generating", unit="batch", disable=not self.progress or len(batches) < 2):
            enc = self.tokenizer([texts[i] for i in batch], return_tensors="pt", padding=True,
                                 add_special_tokens=False).to(self.device)
            gen_kwargs = {"max_new_tokens": max_new_tokens, "pad_token_id": self.tokenizer.pad_token_id}
            if temperature > 0:
                gen_kwargs.update(do_sample=True, temperature=temperature)
            else:
                gen_kwargs.update(do_sample=False, temperature=None, top_p=None, top_k=None)
            with self._torch.inference_mode():
                out = self.model.generate(**enc, **gen_kwargs)
            new_tokens = out[:, enc["input_ids"].shape[1]:]
            for i, row in zip(batch, new_tokens):
                outputs[i] = self.tokenizer.decode(row, skip_special_tokens=True)
        return outputs

    def choose(self, prompts: list[Prompt], choices: list[str]) -> list[tuple[str, list[float]]]:
        """Constrained choice: for each prompt, the choice whose first token is most likely next.

        Returns ``(choice, probabilities over choices)`` per prompt. One forward pass per prompt
        (batched), no sampling: the way to get a label out of a model too small to follow a
        reply format. The choices must start with different tokens.
        """
        from tqdm import tqdm

        first = [self.tokenizer(c, add_special_tokens=False)["input_ids"][0] for c in choices]
        if len(set(first)) != len(first):
            raise ValueError(f"choices {choices} do not start with different tokens")
        texts = [self._render(p) for p in prompts]
        lengths = [len(self.tokenizer(t, add_special_tokens=False)["input_ids"]) for t in texts]
        order = sorted(range(len(texts)), key=lambda i: (-lengths[i], i))
        results: list[tuple[str, list[float]]] = [("", [])] * len(texts)
        batches = [order[i:i + self.batch_size] for i in range(0, len(order), self.batch_size)]
        for batch in tqdm(batches, desc="scoring", unit="batch", disable=not self.progress or len(batches) < 2):
            enc = self.tokenizer([texts[i] for i in batch], return_tensors="pt", padding=True,
                                 add_special_tokens=False).to(self.device)
            with self._torch.inference_mode():
                logits = self.model(**enc).logits[:, -1, :].float()
            probs = self._torch.softmax(logits[:, first], dim=-1).tolist()
            for i, p in zip(batch, probs):
                results[i] = (choices[max(range(len(choices)), key=lambda c: p[c])], p)
        return results
