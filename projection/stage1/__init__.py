"""Stage 1: BM25 top-k per question, then gold-answer string matching in each hit.

* :mod:`.retrieval`: :func:`stage1`, :func:`bm25_batch`, text sources (corpus or index);
* :mod:`.retrievers`: the local Lucene index or a BM25 service (:mod:`.rest_search`, the client of
  the upstream REST API), chosen by ``ProjectSettings.retriever``;
* :mod:`.answer_match`: the stage-1 normalisation and :func:`find_first_match`;
* :mod:`.passages`: the word window around a match (:func:`passage_around`, :func:`extract_passage`).
"""
