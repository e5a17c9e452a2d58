"""The BM25 index: :mod:`.lucene` (the only module that touches pyserini and Java;
:func:`open_searcher`, :func:`build_index`) and :mod:`.build_index`
(:func:`build_corpus_index`, parquet shards -> Lucene), and :mod:`.service` (the index over HTTP for
``nanoknow serve-index``: :class:`ServiceSettings`, :func:`serve`).
"""
