"""``openai`` backend: any OpenAI-compatible chat-completions server over HTTP.

Requests run concurrently (``concurrency`` threads); 408/409/429/5xx answers, timeouts and
connection errors are retried with exponential backoff and jitter (a ``Retry-After`` header is
honoured, capped at ``max_backoff``); other 4xx answers fail at once with the server's reason.
``base_url``, ``api_key`` and ``model`` come from the arguments, else from the environment
(``OPENAI_BASE_URL``, ``OPENAI_API_KEY``, ``OPENAI_MODEL``). Plain-string prompts are sent
as one user turn.
"""

from __future__ import annotations

import logging
import os
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import requests

from nanoknow_common.llm.base import LLMBackendError, Prompt, TextGenerator, as_messages

log = logging.getLogger(__name__)

RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504}


class OpenAIBackend(TextGenerator):
    """Chat completions from ``{base_url}/chat/completions``."""

    name = "openai"

    def __init__(self, model: str | None = None, *, base_url: str | None = None, api_key: str | None = None,
                 concurrency: int = 8, timeout: float = 120.0, max_retries: int = 6,
                 backoff: float = 1.0, max_backoff: float = 60.0, extra_body: dict | None = None,
                 progress: bool = True):
        self.model = model or os.environ.get("OPENAI_MODEL")
        self.base_url = (base_url or os.environ.get("OPENAI_BASE_URL") or "").rstrip("/")
        if not self.model:
            raise LLMBackendError("the openai backend needs a model name (--model or env OPENAI_MODEL)")
        if not self.base_url:
            raise LLMBackendError("the openai backend needs a server URL (--base-url or env OPENAI_BASE_URL), "
                                  "e.g. http://localhost:8000/v1 for `vllm serve`")
        self.api_key = api_key or os.environ.get("OPENAI_API_KEY") or "EMPTY"
        self.concurrency = max(1, int(concurrency))
        self.timeout = timeout
        self.max_retries = max(0, int(max_retries))
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.extra_body = extra_body or {}
        self.progress = progress
        self._local = threading.local()
        self.retries = 0  # total retried requests (for reports and tests)
        self._retries_lock = threading.Lock()

    def _session(self) -> requests.Session:
        session = getattr(self._local, "session", None)
        if session is None:
            session = requests.Session()
            session.headers.update({"Authorization": f"Bearer {self.api_key}", "Content-Type": "application/json"})
            self._local.session = session
        return session

    def _delay(self, attempt: int, retry_after: str | None) -> float:
        delay = min(self.max_backoff, self.backoff * (2 ** attempt))
        if retry_after:
            try:
                delay = max(delay, min(self.max_backoff, float(retry_after)))
            except ValueError:
                pass
        return delay * (1 + 0.25 * random.random())

    def complete(self, prompt: Prompt, *, max_new_tokens: int = 64, temperature: float = 0.0) -> str:
        """One chat completion, with retries."""
        body = {"model": self.model, "messages": as_messages(prompt), "max_tokens": max_new_tokens,
                "temperature": temperature, **self.extra_body}
        url = f"{self.base_url}/chat/completions"
        last = ""
        for attempt in range(self.max_retries + 1):
            retry_after = None
            try:
                response = self._session().post(url, json=body, timeout=self.timeout)
            except (requests.Timeout, requests.ConnectionError) as err:
                last = f"{type(err).__name__}: {err}"
            else:
                if response.status_code == 200:
                    try:
                        message = response.json()["choices"][0]["message"]
                    except (ValueError, KeyError, IndexError, TypeError) as err:
                        raise LLMBackendError(f"{url}: unexpected response {response.text[:200]!r}") from err
                    return message.get("content") or ""
                last = f"HTTP {response.status_code}: {response.text[:200]}"
                if response.status_code not in RETRY_STATUS:
                    raise LLMBackendError(f"{url}: {last}")
                retry_after = response.headers.get("Retry-After")
            if attempt == self.max_retries:
                break
            delay = self._delay(attempt, retry_after)
            with self._retries_lock:
                self.retries += 1
            log.warning("%s: %s; retrying in %.1fs (attempt %d/%d)", url, last, delay, attempt + 1, self.max_retries)
            time.sleep(delay)
        raise LLMBackendError(f"{url}: gave up after {self.max_retries + 1} attempts; last error: {last}")

    def generate(self, prompts: list[Prompt], *, max_new_tokens: int = 64, temperature: float = 0.0) -> list[str]:
        from tqdm import tqdm

        if not prompts:
            return []
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(prompts))) as pool:
            futures = [pool.submit(self.complete, p, max_new_tokens=max_new_tokens, temperature=temperature)
                       for p in prompts]
            return [f.result() for f in tqdm(futures, desc="requests", unit="req",
                                             disable=not self.progress or len(futures) < 2)]
