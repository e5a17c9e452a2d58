"""Which BM25 retriever stage 1 uses: the local Lucene index (``--retriever lucene``, default) or a
BM25 service over HTTP (``--retriever rest``), and where the texts of the hits come from.

Public: :func:`add_arguments` (the retriever options of ``nanoknow project``), :func:`check_args`
(before any output is written) and :func:`open_retriever` (a context manager giving
``(searcher, text_source)`` for :func:`projection.retrieval.stage1`).
"""

from __future__ import annotations

import argparse
import contextlib
import logging

from projection.errors import NanoKnowInputError
from projection.stage1.rest_search import DEFAULT_TOKEN_ENV

log = logging.getLogger(__name__)

RETRIEVERS = ("lucene", "rest")


def add_arguments(group) -> None:
    """``--retriever`` and the ``--rest-*`` options (``--concurrency`` is the project's own)."""
    group.add_argument("--retriever", choices=RETRIEVERS, default="lucene",
                       help="lucene: search --index here (default); rest: ask a BM25 service (nanoknow serve-index, "
                            "or a Pyserini REST API) at --rest-url, no local index needed")
    group.add_argument("--rest-url", default=None, help="BM25 service base URL, e.g. http://index-host:8081 (rest)")
    group.add_argument("--rest-index", default=None, help="index name on the service, as in /v1/NAME/search (rest)")
    group.add_argument("--rest-token-env", default=DEFAULT_TOKEN_ENV,
                       help=f"environment variable holding the service's bearer token (default {DEFAULT_TOKEN_ENV}); "
                            "the token itself is never taken from the command line")
    group.add_argument("--rest-timeout", type=float, default=60.0, help="seconds per request (rest; default 60)")
    group.add_argument("--rest-retries", type=int, default=5,
                       help="retries per request on 429/5xx, timeouts and dropped connections (rest; default 5)")


def check_args(args: argparse.Namespace) -> None:
    """Refuse a retriever without what it needs, before any output is written."""
    if args.retriever == "lucene":
        if args.index is None:
            raise NanoKnowInputError("required (or use --retriever rest --rest-url URL --rest-index NAME)",
                                     field="--index")
        from projection import lucene

        lucene.check_index_dir(args.index)
        if args.corpus is None:
            log.info("no --corpus: document texts will be read from the index (it must store raw documents)")
        return
    if args.index is not None:
        raise NanoKnowInputError("not used with --retriever rest (the service searches its own index)", field="--index")
    for flag in ("rest_url", "rest_index"):
        if not getattr(args, flag):
            raise NanoKnowInputError("required with --retriever rest", field="--" + flag.replace("_", "-"))
    if args.corpus is None:
        log.info("no --corpus: document texts will come from the BM25 service")


@contextlib.contextmanager
def open_retriever(args: argparse.Namespace):
    """``(searcher, text_source)`` for stage 1, closed on exit."""
    from projection.corpus import Corpus
    from projection.retrieval import CorpusTexts, IndexTexts

    corpus_texts = CorpusTexts(Corpus(args.corpus, text_column=args.text_column)) if args.corpus else None
    if args.retriever == "lucene":
        from projection import lucene

        searcher = lucene.open_searcher(args.index)
        yield searcher, corpus_texts or IndexTexts(searcher, threads=args.threads)
        return
    from projection.stage1.rest_search import RestSearcher, RestSettings, RestTexts

    settings = RestSettings(url=args.rest_url, index=args.rest_index, token_env=args.rest_token_env,
                            concurrency=args.concurrency, timeout=args.rest_timeout, retries=args.rest_retries)
    with RestSearcher(settings, keep_texts=corpus_texts is None) as searcher:
        searcher.check()
        yield searcher, corpus_texts or RestTexts(searcher)
