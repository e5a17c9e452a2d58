"""The interface every text-generation backend implements."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Union

#: A prompt: a plain string, or a chat as a list of ``{"role": ..., "content": ...}`` messages.
Prompt = Union[str, list]


class LLMBackendError(RuntimeError):
    """A backend could not produce completions (server unreachable after retries, bad model...)."""


class TextGenerator(ABC):
    """Generates one completion per prompt, in order; greedy when ``temperature`` is 0."""

    name: str = "base"

    @abstractmethod
    def generate(self, prompts: list[Prompt], *, max_new_tokens: int = 64,
                 temperature: float = 0.0) -> list[str]:
        """Completions (text only, without the prompt) for ``prompts``."""

    def close(self) -> None:
        """Release resources (threads, GPU memory); the default does nothing."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def as_messages(prompt: Prompt) -> list[dict]:
    """A chat for ``prompt``: a string becomes one user turn."""
    if isinstance(prompt, str):
        return [{"role": "user", "content": prompt}]
    if not isinstance(prompt, list) or not all(isinstance(m, dict) and "role" in m and "content" in m for m in prompt):
        raise TypeError("a prompt must be a string or a list of {'role', 'content'} messages")
    return prompt


def render_chat(tokenizer, prompt: Prompt) -> str:
    """A prompt as text: a string as it is, a chat through the tokenizer's chat template.

    Thinking is switched off where the template knows the switch (Qwen3 and others).
    """
    if isinstance(prompt, str):
        return prompt
    messages = as_messages(prompt)
    try:
        return tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False,
                                             enable_thinking=False)
    except TypeError:
        return tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
