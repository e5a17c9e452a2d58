"""The pre-training corpus: parquet shards ``shard_XXXXX.parquet`` and doc ids ``shard_<shard>_<row>``.

:class:`~.shards.Corpus` (local folder or remote URI; batched reads by doc id, shard
iteration), :func:`~.shards.parse_doc_id`, :func:`~.shards.format_doc_id`,
:func:`~.shards.canonical_doc_id`.
"""
