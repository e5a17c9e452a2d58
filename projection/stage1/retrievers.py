"""Which BM25 retriever stage 1 uses: the local Lucene index (``--retriever lucene``, default) or a
BM25 service over HTTP (``--retriever rest``), and where the texts of the hits come from.

Public: :func:`check_settings` (before any output is written) and :func:`open_retriever` (a
context manager giving ``(searcher, text_source)`` for :func:`projection.stage1.retrieval.stage1`),
both on a :class:`projection.pipeline.ProjectSettings`.
"""

from __future__ import annotations

import contextlib
import logging

from nanoknow_common.errors import NanoKnowInputError

log = logging.getLogger(__name__)

RETRIEVERS = ("lucene", "rest")


def check_settings(settings) -> None:
    """Refuse a retriever without what it needs, before any output is written."""
    if settings.retriever == "lucene":
        if settings.index is None:
            raise NanoKnowInputError("required (or use --retriever rest --rest-url URL --rest-index NAME)",
                                     field="--index")
        from projection.index import lucene

        lucene.check_index_dir(settings.index)
        if settings.corpus is None:
            log.info("no --corpus: document texts will be read from the index (it must store raw documents)")
        return
    if settings.index is not None:
        raise NanoKnowInputError("not used with --retriever rest (the service searches its own index)", field="--index")
    for flag in ("rest_url", "rest_index"):
        if not getattr(settings, flag):
            raise NanoKnowInputError("required with --retriever rest", field="--" + flag.replace("_", "-"))
    if settings.corpus is None:
        log.info("no --corpus: document texts will come from the BM25 service")


@contextlib.contextmanager
def open_retriever(settings):
    """``(searcher, text_source)`` for stage 1, closed on exit."""
    from projection.corpus.shards import Corpus
    from projection.stage1.retrieval import CorpusTexts, IndexTexts

    corpus_texts = CorpusTexts(Corpus(settings.corpus, text_column=settings.text_column)) if settings.corpus else None
    if settings.retriever == "lucene":
        from projection.index import lucene

        searcher = lucene.open_searcher(settings.index)
        yield searcher, corpus_texts or IndexTexts(searcher, threads=settings.threads)
        return
    from projection.stage1.rest_search import RestSearcher, RestSettings, RestTexts

    settings = RestSettings(url=settings.rest_url, index=settings.rest_index, token_env=settings.rest_token_env,
                            concurrency=settings.concurrency, timeout=settings.rest_timeout, retries=settings.rest_retries)
    with RestSearcher(settings, keep_texts=corpus_texts is None) as searcher:
        searcher.check()
        yield searcher, corpus_texts or RestTexts(searcher)
