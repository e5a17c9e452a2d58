"""BM25 as a service: the Pyserini-style REST API over a local Lucene index (FastAPI + uvicorn).

The API is the one upstream NanoKnow's REST client speaks:

* ``GET /v1/{index}/search?query=TEXT&hits=N`` -> ``{"candidates": [{"docid", "score", "doc"}, ...]}``
  (ranked; ``doc`` is the stored raw document, e.g. ``{"id", "contents"}``, or ``{"id", "contents"}``
  read from ``--corpus``; absent when the service has no texts);
* ``GET /v1/{index}/doc/{docid}`` -> ``{"doc": ...}``;
* ``GET /health`` -> ``{"status": "ok"}`` (no token needed: for load balancers).

Safe by default: only the configured index name resolves (requests never name a path); with a
token in the environment (``NANOKNOW_INDEX_TOKEN`` unless another variable is named) every other
request must carry ``Authorization: Bearer <token>`` (compared in constant time), and binding
beyond loopback without a token is refused; ``hits`` and the query length are capped (400);
errors are JSON ``{"error": reason}``. Requests are served by a pool of threads (text reads,
JSON); one thread talks to the JVM and runs the searches that arrive together as one
multi-threaded ``batch_search`` (see :class:`JvmWorker`). One log line per request.

Public: :class:`ServiceSettings`, :class:`IndexService`, :func:`create_app`, :func:`serve`.
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import json
import logging
import os
import queue
import re
import socket
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from nanoknow_common.errors import NanoKnowInputError

log = logging.getLogger(__name__)

DEFAULT_TOKEN_ENV = "NANOKNOW_INDEX_TOKEN"
DEFAULT_PORT = 8081
#: Paths served without a token.
OPEN_PATHS = frozenset({"/health"})
_INDEX_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


@dataclass
class ServiceSettings:
    """What ``nanoknow serve-index`` serves, where, and its limits."""

    index: Path
    name: str | None = None  # default: the index folder's name
    corpus: str | None = None  # parquet corpus for texts (else the index's raw documents)
    text_column: str = "text"
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    token_env: str = DEFAULT_TOKEN_ENV
    max_hits: int = 1000
    max_query_chars: int = 2000
    threads: int = 8


class ServiceError(Exception):
    """An answer other than 200: HTTP status and a one-line reason."""

    def __init__(self, status: int, reason: str):
        super().__init__(reason)
        self.status = status
        self.reason = reason


def is_loopback(host: str) -> bool:
    """True when every address ``host`` names is a loopback address."""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None)
    except socket.gaierror as err:
        raise NanoKnowInputError(f"cannot resolve host {host!r}: {err}", field="--host") from err
    return bool(infos) and all(ipaddress.ip_address(info[4][0].split("%")[0]).is_loopback for info in infos)


def index_name(settings: ServiceSettings) -> str:
    """The name clients use in URLs: ``--name`` or the index folder's name."""
    name = settings.name if settings.name is not None else Path(settings.index).resolve().name
    if not _INDEX_NAME.fullmatch(name) or ".." in name:
        raise NanoKnowInputError(f"index name {name!r} must be letters, digits, '.', '_' or '-' (and no '..')",
                                 field="--name")
    return name


def check_settings(settings: ServiceSettings) -> str | None:
    """Validate ``settings`` before anything starts; return the token (None: no auth)."""
    from projection.index import lucene

    lucene.check_index_dir(settings.index)
    for field in ("max_hits", "max_query_chars", "threads"):
        if getattr(settings, field) < 1:
            raise NanoKnowInputError("must be at least 1", field="--" + field.replace("_", "-"))
    if not 0 <= settings.port <= 65535:
        raise NanoKnowInputError("must be between 0 and 65535", field="--port")
    token = os.environ.get(settings.token_env) or None
    if token is None and not is_loopback(settings.host):
        raise NanoKnowInputError(f"refusing to serve beyond loopback without a token: set {settings.token_env} "
                                 "in the environment (clients send it as a bearer token)", field="--host")
    if token is not None and len(token) < 16:
        log.warning("the token in %s is shorter than 16 characters; use a long random one "
                    "(python -c 'import secrets; print(secrets.token_urlsafe(32))')", settings.token_env)
    if token is not None and not is_loopback(settings.host):
        log.warning("serving plain HTTP on %s: put a TLS proxy in front of it, the token travels in clear",
                    settings.host)
    return token


def _parse_raw(raw: str | None):
    """A stored raw document as JSON (``{"id", "contents"}``), or the raw string if it is not JSON."""
    if raw is None:
        return None
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw


class JvmWorker:
    """The one thread that calls the JVM, batching the searches that arrive together.

    pyjnius is not safe to call from several Python threads at once (concurrent calls crashed
    the JVM in Lucene code under load), so requests queue here: each round takes every waiting
    request (up to ``max_batch``) and runs the searches of one ``k`` as one pyserini
    ``batch_search``, whose ``threads`` Java threads search in parallel, the same call the local
    retriever makes. Results leave this thread as plain Python values.
    """

    def __init__(self, open_searcher, *, threads: int = 8, max_batch: int = 64):
        self.searcher = None
        self.threads = threads
        self.max_batch = max_batch
        self._queue: queue.Queue = queue.Queue()
        ready: Future = Future()
        # the searcher is opened (and the JVM started) on the thread that will use it
        self._thread = threading.Thread(target=self._run, args=(open_searcher, ready), name="jvm", daemon=True)
        self._thread.start()
        ready.result()

    def _submit(self, kind: str, payload) -> Future:
        future: Future = Future()
        self._queue.put((kind, payload, future))
        return future

    def call(self, function):
        """Run ``function(searcher)`` on the JVM thread and return its result."""
        return self._submit("call", function).result()

    def search(self, query: str, k: int, with_raw: bool) -> list[tuple[str, float, str | None]]:
        """``[(docid, score, raw or None), ...]`` ranked."""
        return self._submit("search", (query, int(k), with_raw)).result()

    def doc(self, docid: str) -> tuple[bool, str | None]:
        """``(in the index, stored raw document or None)``."""
        return self._submit("doc", docid).result()

    def stop(self) -> None:
        self._queue.put(None)

    def _run(self, open_searcher, ready: Future) -> None:
        try:
            self.searcher = open_searcher()
        except BaseException as err:
            ready.set_exception(err)
            return
        ready.set_result(None)
        while True:
            first = self._queue.get()
            if first is None:
                return
            items = [first]
            while len(items) < self.max_batch:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is None:
                    self._queue.put(None)  # stop after this round
                    break
                items.append(item)
            searches: dict[tuple[int, bool], list] = {}
            for kind, payload, future in items:
                if not future.set_running_or_notify_cancel():
                    continue
                if kind == "search":
                    searches.setdefault(payload[1:], []).append((payload[0], future))
                else:
                    self._settle(future, self._one, kind, payload)
            for (k, with_raw), group in searches.items():
                try:
                    found = self.searcher.batch_search([q for q, _ in group], [str(i) for i in range(len(group))],
                                                       k=k, threads=self.threads)
                    results = [[(h.docid, float(h.score), h.lucene_document.get("raw") if with_raw else None)
                                for h in found.get(str(i), [])] for i in range(len(group))]
                except Exception as err:  # a JVM failure fails this group, the service goes on
                    for _, future in group:
                        future.set_exception(err)
                    continue
                for (_, future), result in zip(group, results):
                    future.set_result(result)

    def _one(self, kind: str, payload):
        if kind == "call":
            return payload(self.searcher)
        found = self.searcher.doc(payload) if payload else None
        return (False, None) if found is None else (True, found.raw())

    @staticmethod
    def _settle(future: Future, function, *args) -> None:
        try:
            future.set_result(function(*args))
        except Exception as err:
            future.set_exception(err)


class BatchedCorpusTexts:
    """Texts from the parquet corpus, with the reads of concurrent requests merged into one.

    A read costs about the same for one id as for many in the same shards (DuckDB decodes whole
    row groups), so one reader thread takes every waiting request and reads all their ids with
    one :meth:`Corpus.read_documents` call, as the local stage 1 reads a whole chunk at once.
    """

    def __init__(self, corpus, *, max_batch: int = 64):
        self.corpus = corpus
        self.max_batch = max_batch
        self._queue: queue.Queue = queue.Queue()
        threading.Thread(target=self._run, name="corpus-reader", daemon=True).start()

    def texts(self, doc_ids: list[str]) -> dict[str, str]:
        future: Future = Future()
        self._queue.put((doc_ids, future))
        return future.result()

    def _run(self) -> None:
        while True:
            items = [self._queue.get()]
            while len(items) < self.max_batch:
                try:
                    items.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            try:
                texts = self.corpus.read_documents(dict.fromkeys(d for ids, _ in items for d in ids))
            except Exception as err:  # fail every request of the round; the reader goes on
                for _, future in items:
                    future.set_exception(err)
                continue
            for ids, future in items:
                future.set_result({d: texts[d] for d in ids})


class IndexService:
    """Search and document look-up over one opened index (no HTTP here; safe from any thread)."""

    def __init__(self, open_searcher, name: str, *, corpus=None, max_hits: int = 1000, max_query_chars: int = 2000,
                 threads: int = 8):
        """``open_searcher()`` returns the pyserini searcher; it is called on the JVM thread."""
        self.jvm = JvmWorker(open_searcher, threads=threads)
        self.name = name
        self.corpus = BatchedCorpusTexts(corpus) if corpus is not None else None
        self.max_hits = max_hits
        self.max_query_chars = max_query_chars
        self.num_docs, self.stores_raw = self.jvm.call(
            lambda s: (int(s.num_docs), s.num_docs > 0 and s.doc(0) is not None and s.doc(0).raw() is not None))
        self.texts_from = "corpus" if corpus is not None else "index" if self.stores_raw else None

    def _check_name(self, index: str) -> None:
        if index != self.name:  # only the configured name resolves; never a path
            raise ServiceError(404, f"unknown index {index!r}")

    def search(self, index: str, query: str, hits: int) -> dict:
        """``{"candidates": [...]}``: the top ``hits`` documents for ``query`` in BM25 order."""
        self._check_name(index)
        if not query.strip():
            raise ServiceError(400, "query must not be empty")
        if len(query) > self.max_query_chars:
            raise ServiceError(400, f"query is {len(query)} characters long; the limit is {self.max_query_chars}")
        if not 1 <= hits <= self.max_hits:
            raise ServiceError(400, f"hits must be between 1 and {self.max_hits}, not {hits}")
        found = self.jvm.search(query, hits, with_raw=self.texts_from == "index")
        candidates = [{"docid": docid, "score": score} for docid, score, _ in found]
        if self.texts_from == "corpus":
            texts = self._corpus_texts([c["docid"] for c in candidates])
            for c in candidates:
                c["doc"] = {"id": c["docid"], "contents": texts[c["docid"]]}
        elif self.texts_from == "index":
            for c, (_, _, raw) in zip(candidates, found):
                c["doc"] = _parse_raw(raw)
        return {"candidates": candidates}

    def doc(self, index: str, docid: str) -> dict:
        """``{"doc": ...}`` for one document id of the index."""
        self._check_name(index)
        exists, raw = self.jvm.doc(docid)
        if not exists:
            raise ServiceError(404, f"document {docid!r} is not in index {self.name!r}")
        if self.texts_from == "corpus":
            return {"doc": {"id": docid, "contents": self._corpus_texts([docid])[docid]}}
        if raw is None:
            raise ServiceError(404, f"no text for {docid!r}: the index stores no raw documents and the service "
                                    "was started without --corpus")
        return {"doc": _parse_raw(raw)}

    def close(self) -> None:
        self.jvm.stop()

    def _corpus_texts(self, doc_ids: list[str]) -> dict[str, str]:
        try:
            return self.corpus.texts(doc_ids)
        except NanoKnowInputError as err:  # the index and the corpus do not belong together
            raise ServiceError(500, f"cannot read document text from the corpus: {err}") from err


class _AuthAndAccessLog:
    """ASGI middleware: bearer-token check (all but :data:`OPEN_PATHS`) and one log line per request."""

    def __init__(self, app, token: str | None):
        self.app = app
        self.token = token.encode() if token else None

    def _authorized(self, scope) -> bool:
        for key, value in scope.get("headers", ()):
            if key == b"authorization":
                scheme, _, credentials = value.partition(b" ")
                # compare_digest takes time independent of where the strings differ
                return scheme.lower() == b"bearer" and hmac.compare_digest(credentials.strip(), self.token)
        return False

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        from starlette.responses import JSONResponse

        start = time.perf_counter()
        status = [0]

        async def send_and_note(message):
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            await send(message)

        try:
            if self.token is not None and scope["path"] not in OPEN_PATHS and not self._authorized(scope):
                response = JSONResponse({"error": "missing or wrong bearer token"}, status_code=401,
                                        headers={"WWW-Authenticate": "Bearer"})
                await response(scope, receive, send_and_note)
            else:
                await self.app(scope, receive, send_and_note)
        finally:
            client = (scope.get("client") or ("-",))[0]
            log.info("%s %s %s %d %.1fms", client, scope["method"], scope["path"], status[0] or 500,
                     (time.perf_counter() - start) * 1000)


def create_app(service: IndexService, *, token: str | None = None, threads: int = 8):
    """The FastAPI application serving ``service`` (requests handled by ``threads`` worker threads)."""
    from fastapi import FastAPI, Request
    from fastapi.exceptions import RequestValidationError
    from starlette.exceptions import HTTPException
    from starlette.responses import JSONResponse, Response

    # request handlers wait on the JVM thread, read texts and encode JSON here, off the event loop
    pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="bm25-request")

    @asynccontextmanager
    async def lifespan(_app):
        yield
        pool.shutdown(wait=False, cancel_futures=True)
        service.close()

    app = FastAPI(title="NanoKnow BM25 service", lifespan=lifespan, docs_url=None, redoc_url=None,
                  openapi_url=None)

    def as_json(call, *args) -> bytes:
        try:
            result = call(*args)
        except ServiceError:
            raise
        except Exception as err:  # a JVM or DuckDB failure: answer 500 and keep serving
            log.exception("request failed")
            raise ServiceError(500, f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}") from err
        return json.dumps(result, ensure_ascii=False, separators=(",", ":")).encode()

    async def in_pool(call, *args) -> Response:
        body = await asyncio.get_running_loop().run_in_executor(pool, as_json, call, *args)
        return Response(body, media_type="application/json")

    @app.exception_handler(ServiceError)
    async def service_error(_request: Request, err: ServiceError):
        return JSONResponse({"error": err.reason}, status_code=err.status)

    @app.exception_handler(RequestValidationError)
    async def bad_request(_request: Request, err: RequestValidationError):
        reasons = "; ".join(f"{'.'.join(str(p) for p in e['loc'][1:])}: {e['msg']}" for e in err.errors())
        return JSONResponse({"error": reasons}, status_code=400)

    @app.exception_handler(HTTPException)
    async def http_error(_request: Request, err: HTTPException):
        return JSONResponse({"error": err.detail}, status_code=err.status_code, headers=err.headers)

    @app.get("/health")
    async def health():
        return {"status": "ok"}

    @app.get("/v1/{index}/search")
    async def search(index: str, query: str, hits: int = 10):
        return await in_pool(service.search, index, query, hits)

    @app.get("/v1/{index}/doc/{docid:path}")
    async def doc(index: str, docid: str):
        return await in_pool(service.doc, index, docid)

    app.add_middleware(_AuthAndAccessLog, token=token)
    return app


def open_service(settings: ServiceSettings) -> tuple[IndexService, str | None]:
    """Check ``settings``, start the JVM, open the index (and corpus); return the service and token."""
    from projection.index import lucene
    from projection.corpus.shards import Corpus

    token = check_settings(settings)
    name = index_name(settings)
    corpus = Corpus(settings.corpus, text_column=settings.text_column) if settings.corpus else None
    service = IndexService(lambda: lucene.open_searcher(settings.index), name, corpus=corpus,
                           max_hits=settings.max_hits, max_query_chars=settings.max_query_chars,
                           threads=settings.threads)
    if service.texts_from is None:
        log.warning("the index stores no raw documents and no --corpus was given: searches return ids and "
                    "scores only, and clients need their own copy of the corpus")
    return service, token


def serve(settings: ServiceSettings) -> None:
    """Serve ``settings.index`` until interrupted (SIGINT/SIGTERM)."""
    import uvicorn

    service, token = open_service(settings)
    # request threads: enough to keep a full batch waiting on the JVM while others read and encode
    app = create_app(service, token=token, threads=2 * settings.threads)
    log.info("serving index %r (%d documents, texts from %s, %s) on http://%s:%d/v1/%s/",
             service.name, service.num_docs, service.texts_from or "nowhere",
             f"token from {settings.token_env}" if token else "no token", settings.host, settings.port,
             service.name)
    # log_config=None: uvicorn's loggers go through the root handler `nanoknow` set up;
    # access_log off: the middleware already writes one line per request.
    # limit_concurrency: beyond it uvicorn answers 503, which clients retry (back-pressure).
    uvicorn.run(app, host=settings.host, port=settings.port, log_config=None, access_log=False,
                limit_concurrency=max(64, 16 * settings.threads), timeout_graceful_shutdown=5)
