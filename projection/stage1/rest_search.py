"""A BM25 searcher that asks a REST service (``nanoknow serve-index``, or the Pyserini REST API
upstream NanoKnow used for ClimbMix-400B) instead of opening a local Lucene index.

:class:`RestSearcher` has the ``batch_search`` that :func:`projection.stage1.retrieval.bm25_batch`
calls on a pyserini searcher, so stage 1 runs unchanged: questions go out ``concurrency`` at a
time over reused connections (one ``requests.Session`` per worker thread), with a timeout per
request and bounded retries with exponential backoff on 408/429/5xx, timeouts and dropped
connections (a ``Retry-After`` header is honoured, capped at ``max_backoff``).
:class:`RestTexts` is the matching text source: the texts that came with the hits, and
``GET /v1/{index}/doc/{docid}`` for hits that came without one.

The bearer token comes from the environment only (``PYSERINI_API_TOKEN`` unless another
variable is named); it is sent in a header and never logged or written anywhere.

Public: :class:`RestSettings`, :class:`RestSearcher`, :class:`RestTexts`, :func:`doc_text`.
"""

from __future__ import annotations

import email.utils
import json
import logging
import os
import random
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from urllib.parse import quote, urlsplit

import requests

from nanoknow_common.errors import NanoKnowInputError

log = logging.getLogger(__name__)

DEFAULT_TOKEN_ENV = "PYSERINI_API_TOKEN"
RETRY_STATUS = frozenset({408, 429, 500, 502, 503, 504})
#: The query of the check made before the first batch (any word does).
PROBE_QUERY = "nanoknow"


@dataclass
class RestSettings:
    """Where the service is and how to talk to it."""

    url: str
    index: str
    token_env: str = DEFAULT_TOKEN_ENV
    concurrency: int = 8
    timeout: float = 60.0  # seconds per request (connect and read)
    retries: int = 5  # retries per request after the first attempt
    backoff: float = 0.5  # first retry delay in seconds; doubles each attempt
    max_backoff: float = 60.0


@dataclass(frozen=True)
class RestHit:
    """One ranked hit, shaped like pyserini's (``docid``, ``score``)."""

    docid: str
    score: float


def doc_text(doc) -> str | None:
    """Text of a ``doc`` as services send it: an object with ``contents`` (or ``text``, ``segment``),
    a string holding such an object as JSON, or a plain string. None when there is no doc."""
    if doc is None:
        return None
    if isinstance(doc, str):
        try:
            parsed = json.loads(doc)
        except json.JSONDecodeError:
            return doc
        return doc_text(parsed) if isinstance(parsed, dict) else doc
    if isinstance(doc, dict):
        for key in ("contents", "text", "segment"):
            if isinstance(doc.get(key), str):
                return doc[key]
        return ""  # as projection.stage1.retrieval.IndexTexts reads a raw document without text
    return str(doc)


def _reason(err: Exception) -> str:
    """The short cause of a requests exception (its str() repeats the whole URL and pool state)."""
    if isinstance(err, requests.Timeout):
        return "timed out"
    match = re.search(r"\[Errno -?\d+\] [^'\")]+", str(err))
    return match.group(0) if match else type(err).__name__


def _retry_after(value: str | None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (seconds or an HTTP date)."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


class RestSearcher:
    """pyserini-like searcher over ``GET {url}/v1/{index}/search``; see the module docstring."""

    def __init__(self, settings: RestSettings, *, keep_texts: bool = True, progress: bool = True):
        parts = urlsplit(settings.url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise NanoKnowInputError(f"expected an http:// or https:// URL, not {settings.url!r}", field="--rest-url")
        if not settings.index or "/" in settings.index:
            raise NanoKnowInputError(f"expected an index name, not {settings.index!r}", field="--rest-index")
        for field, flag in (("concurrency", "--concurrency"), ("timeout", "--rest-timeout")):
            if getattr(settings, field) <= 0:
                raise NanoKnowInputError("must be positive", field=flag)
        if settings.retries < 0:
            raise NanoKnowInputError("must be at least 0", field="--rest-retries")
        self.settings = settings
        self.base = settings.url.rstrip("/")
        self.prefix = f"{self.base}/v1/{quote(settings.index, safe='')}"
        self.token = os.environ.get(settings.token_env) or None
        if self.token and parts.scheme == "http" and parts.hostname not in ("127.0.0.1", "localhost", "::1"):
            log.warning("sending the token from %s over plain http to %s; prefer https", settings.token_env,
                        parts.hostname)
        self.keep_texts = keep_texts
        self.progress = progress
        self.retried = 0  # requests retried, for logs and tests
        self.last_texts: dict[str, str] = {}  # texts that came with the hits of the last batch
        self._local = threading.local()
        self._sessions: list[requests.Session] = []
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=int(settings.concurrency), thread_name_prefix="rest-bm25")

    # -- plumbing -------------------------------------------------------------------------
    def _session(self) -> requests.Session:
        session = getattr(self._local, "session", None)
        if session is None:
            session = requests.Session()
            if self.token:
                session.headers["Authorization"] = f"Bearer {self.token}"
            self._local.session = session
            with self._lock:
                self._sessions.append(session)
        return session

    def _refused(self, what: str, status: int, body: str) -> NanoKnowInputError:
        env = self.settings.token_env
        if status in (401, 403):
            hint = (f"the token in {env} was refused" if self.token else
                    f"the service wants a bearer token: set {env}")
            return NanoKnowInputError(f"{self.base}: HTTP {status} ({hint}; --rest-token-env names another variable)",
                                      field="--rest-token-env")
        return NanoKnowInputError(f"{self.base}: HTTP {status} for {what}: {body}", field="--rest-url")

    @staticmethod
    def _error_text(response: requests.Response) -> str:
        try:
            body = response.json()
            if isinstance(body, dict):
                return str(body.get("error") or body.get("detail") or body)[:300]
        except ValueError:
            pass
        return response.text[:300].replace("\n", " ")

    def _get(self, path: str, params: dict | None = None, *, what: str, retry_connection: bool = True,
             not_found_ok: bool = False) -> dict | None:
        """GET ``{prefix}{path}`` as JSON, with retries; None for a 404 when ``not_found_ok``."""
        url = self.prefix + path
        last = ""
        for attempt in range(self.settings.retries + 1):
            retry_after = None
            try:
                response = self._session().get(url, params=params, timeout=self.settings.timeout)
            except requests.RequestException as err:
                last = _reason(err)
                if not retry_connection:
                    raise NanoKnowInputError(f"cannot reach {self.base}: {last}", field="--rest-url") from err
            else:
                status = response.status_code
                if status == 200:
                    try:
                        return response.json()
                    except ValueError as err:
                        raise NanoKnowInputError(f"{self.base}: answer to {what} is not JSON: "
                                                 f"{response.text[:200]!r}", field="--rest-url") from err
                if status == 404 and not_found_ok:
                    return None
                last = f"HTTP {status}: {self._error_text(response)}"
                if status not in RETRY_STATUS:
                    raise self._refused(what, status, self._error_text(response))
                retry_after = _retry_after(response.headers.get("Retry-After"))
            if attempt == self.settings.retries:
                break
            delay = min(self.settings.max_backoff, self.settings.backoff * 2 ** attempt)
            if retry_after is not None:
                delay = min(self.settings.max_backoff, retry_after)
            else:
                delay *= 1 + 0.25 * random.random()  # jitter: retries of many workers spread out
            with self._lock:
                self.retried += 1
            log.warning("%s (%s): %s; retry %d/%d in %.1fs", self.base, what, last, attempt + 1,
                        self.settings.retries, delay)
            time.sleep(delay)
        raise NanoKnowInputError(f"{self.base}: {what} failed after {self.settings.retries + 1} attempts; "
                                 f"last error: {last}", field="--rest-url")

    # -- searcher API ---------------------------------------------------------------------
    def check(self) -> None:
        """One small request before the work starts: fail fast (no retry on a refused connection)
        with the URL, the token variable or the index name at fault."""
        answer = self._get("/search", {"query": PROBE_QUERY, "hits": 1}, what="a probe search",
                           retry_connection=False, not_found_ok=True)
        if answer is None:
            raise NanoKnowInputError(f"{self.base} does not serve an index named {self.settings.index!r}",
                                     field="--rest-index")

    def search_one(self, query: str, k: int = 10, *, qid: str | None = None) -> tuple[list[RestHit], dict[str, str]]:
        """Ranked hits of one query and the texts that came with them."""
        what = f"question {qid}" if qid is not None else "a search"
        answer = self._get("/search", {"query": query, "hits": int(k)}, what=what)
        candidates = answer.get("candidates") if isinstance(answer, dict) else None
        if not isinstance(candidates, list):
            raise NanoKnowInputError(f"{self.base}: answer to {what} has no candidates list", field="--rest-url")
        hits, texts = [], {}
        for c in candidates:
            try:
                hit = RestHit(str(c["docid"]), float(c["score"]))
            except (KeyError, TypeError, ValueError) as err:
                raise NanoKnowInputError(f"{self.base}: malformed candidate in the answer to {what}: {str(c)[:200]}",
                                         field="--rest-url") from err
            hits.append(hit)
            text = doc_text(c.get("doc", c.get("document_txt")))
            if text is not None:
                texts[hit.docid] = text
        return hits, texts

    def search(self, q: str, k: int = 10) -> list[RestHit]:
        """Like ``LuceneSearcher.search``: the top ``k`` hits of one query."""
        return self.search_one(q, k)[0]

    def batch_search(self, queries: list[str], qids: list[str], k: int = 10,
                     threads: int = 1) -> dict[str, list[RestHit]]:
        """Like ``LuceneSearcher.batch_search``; ``threads`` is ignored (``concurrency`` requests run at once).

        Keeps the texts that came with the hits in ``last_texts`` for :class:`RestTexts` (replacing
        the previous batch's)."""
        from tqdm import tqdm

        futures = [self._pool.submit(self.search_one, q, k, qid=qid) for q, qid in zip(queries, qids)]
        out: dict[str, list[RestHit]] = {}
        self.last_texts = {}
        try:
            for qid, future in zip(qids, tqdm(futures, desc="BM25 requests", unit="q", leave=False,
                                              disable=not self.progress or len(futures) < 2)):
                hits, texts = future.result()
                out[qid] = hits
                if self.keep_texts:
                    self.last_texts.update(texts)
        except BaseException:
            for future in futures:
                future.cancel()
            raise
        return out

    def fetch_text(self, docid: str) -> str | None:
        """Text of one document from ``/doc/{docid}`` (None when the service has none)."""
        answer = self._get("/doc/" + quote(docid, safe=""), what=f"document {docid}", not_found_ok=True)
        return doc_text(answer.get("doc")) if isinstance(answer, dict) else None

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
        with self._lock:
            for session in self._sessions:
                session.close()
            self._sessions.clear()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class RestTexts:
    """Document texts for stage 1 from the service: those sent with the hits, the rest fetched."""

    def __init__(self, searcher: RestSearcher):
        self.searcher = searcher

    def texts(self, doc_ids: list[str]) -> dict[str, str]:
        have = self.searcher.last_texts
        missing = [d for d in dict.fromkeys(doc_ids) if d not in have]
        fetched = dict(zip(missing, self.searcher._pool.map(self.searcher.fetch_text, missing))) if missing else {}
        out = {}
        for doc_id in doc_ids:
            text = have.get(doc_id, fetched.get(doc_id))
            if text is None:
                raise NanoKnowInputError(f"{self.searcher.base} has no text for document {doc_id}; pass --corpus "
                                         "to read texts from the parquet corpus", field="--corpus")
            out[doc_id] = text
        return out
