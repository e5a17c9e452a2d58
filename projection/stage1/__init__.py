"""Stage 1 retrievers: the local Lucene index or a BM25 service over HTTP
(:mod:`projection.stage1.rest_search`), chosen by :mod:`projection.stage1.retrievers`."""
