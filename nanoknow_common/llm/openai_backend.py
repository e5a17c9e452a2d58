"""``openai`` backend: any OpenAI-compatible chat-completions server, through the ``openai`` client.

The client does the transport work: connection reuse, timeouts, and retries of 408/409/429/5xx
answers, timeouts and connection errors with exponential backoff, honouring ``Retry-After``.
This module adds concurrency (``concurrency`` threads over one client), a retry count, and one
error type (:class:`LLMBackendError`) whose message names the URL, the attempts and the last
error. ``base_url``, ``api_key`` and ``model`` come from the arguments, else from the
environment (``OPENAI_BASE_URL``, ``OPENAI_API_KEY``, ``OPENAI_MODEL``). Plain-string prompts
are sent as one user turn.
"""

from __future__ import annotations

import logging
import os
import threading
from concurrent.futures import ThreadPoolExecutor

from nanoknow_common.llm.base import LLMBackendError, Prompt, TextGenerator, as_messages

log = logging.getLogger(__name__)


class OpenAIBackend(TextGenerator):
    """Chat completions from ``{base_url}/chat/completions``."""

    name = "openai"

    def __init__(self, model: str | None = None, *, base_url: str | None = None, api_key: str | None = None,
                 concurrency: int = 8, timeout: float = 120.0, max_retries: int = 6,
                 extra_body: dict | None = None, progress: bool = True):
        self.model = model or os.environ.get("OPENAI_MODEL")
        self.base_url = (base_url or os.environ.get("OPENAI_BASE_URL") or "").rstrip("/")
        if not self.model:
            raise LLMBackendError("the openai backend needs a model name (--model or env OPENAI_MODEL)")
        if not self.base_url:
            raise LLMBackendError("the openai backend needs a server URL (--base-url or env OPENAI_BASE_URL), "
                                  "e.g. http://localhost:8000/v1 for `vllm serve`")
        self.concurrency = max(1, int(concurrency))
        self.max_retries = max(0, int(max_retries))
        self.extra_body = extra_body or {}
        self.progress = progress
        self.retries = 0  # total retried requests (for reports and tests)
        self._lock = threading.Lock()
        self._attempts = threading.local()
        self._client = self._make_client(api_key or os.environ.get("OPENAI_API_KEY") or "EMPTY", timeout)

    def _make_client(self, api_key: str, timeout: float):
        import openai

        # One attempt = one request event; counting them gives the retries the client made.
        http_client = openai.DefaultHttpxClient(event_hooks={"request": [self._count_attempt]})
        return openai.OpenAI(base_url=self.base_url, api_key=api_key, timeout=timeout,
                             max_retries=self.max_retries, http_client=http_client)

    def _count_attempt(self, request) -> None:
        self._attempts.count = getattr(self._attempts, "count", 0) + 1

    def complete(self, prompt: Prompt, *, max_new_tokens: int = 64, temperature: float = 0.0) -> str:
        """One chat completion (the client retries)."""
        import openai

        url = f"{self.base_url}/chat/completions"
        self._attempts.count = 0
        try:
            response = self._client.chat.completions.create(
                model=self.model, messages=as_messages(prompt), max_tokens=max_new_tokens,
                temperature=temperature, extra_body=self.extra_body or None)
        except openai.APIStatusError as err:
            last = f"HTTP {err.status_code}: {err.response.text[:200]}"
            raise LLMBackendError(self._failure(url, last)) from err
        except openai.APIError as err:  # connection errors and timeouts
            raise LLMBackendError(self._failure(url, f"{type(err).__name__}: {err}")) from err
        finally:
            with self._lock:
                self.retries += max(0, self._attempts.count - 1)
        try:
            return response.choices[0].message.content or ""
        except (AttributeError, IndexError, TypeError) as err:
            raise LLMBackendError(f"{url}: unexpected response {str(response)[:200]!r}") from err

    def _failure(self, url: str, last: str) -> str:
        attempts = self._attempts.count
        if attempts > 1:
            return f"{url}: gave up after {attempts} attempts; last error: {last}"
        return f"{url}: {last}"

    def generate(self, prompts: list[Prompt], *, max_new_tokens: int = 64, temperature: float = 0.0) -> list[str]:
        from tqdm import tqdm

        if not prompts:
            return []
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(prompts))) as pool:
            futures = [pool.submit(self.complete, p, max_new_tokens=max_new_tokens, temperature=temperature)
                       for p in prompts]
            return [f.result() for f in tqdm(futures, desc="requests", unit="req",
                                             disable=not self.progress or len(futures) < 2)]

    def close(self) -> None:
        self._client.close()
