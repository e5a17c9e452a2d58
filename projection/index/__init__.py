"""Serving a Lucene BM25 index to other machines: :mod:`projection.index.service` (the HTTP API)
and :mod:`projection.index.serve_cli` (``nanoknow serve-index``)."""
