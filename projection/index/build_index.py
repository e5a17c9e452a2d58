"""``nanoknow index``: a Lucene BM25 index over parquet shards, document ids = corpus ids.

Shards are streamed into JSONL files (``{"id": "shard_00000_17", "contents": ...}``) in a
temporary folder next to the index, which Anserini's ``IndexCollection`` then indexes. Raw
text is not stored unless ``--store-raw``: the projection reads text from the parquet corpus
(the released FineWeb-Edu index stores it and weighs 326 GB; it is usable as is).
"""

from __future__ import annotations

import argparse
import json
import logging
import shutil
import tempfile
from pathlib import Path

from projection.corpus.shards import Corpus, format_doc_id
from nanoknow_common.errors import NanoKnowInputError

log = logging.getLogger(__name__)



def export_jsonl(corpus: Corpus, out_dir: Path, *, shards: list[int] | None = None) -> int:
    """Write one ``shard_XXXXX.jsonl`` per shard into ``out_dir``; return the document count."""
    from tqdm import tqdm

    shards = shards if shards is not None else corpus.list_shards()
    total = 0
    for shard in tqdm(shards, desc="exporting shards", unit="shard"):
        path = out_dir / f"shard_{shard:05d}.jsonl"
        with open(path, "w", encoding="utf-8") as handle:
            for row, text in corpus.iter_shard(shard):
                handle.write(json.dumps({"id": format_doc_id(shard, row), "contents": text}, ensure_ascii=False))
                handle.write("\n")
                total += 1
    return total


def build_corpus_index(corpus: str | Path, index: str | Path, *, threads: int = 1, store_raw: bool = False,
                       store_contents: bool = False, store_docvectors: bool = False,
                       text_column: str = "text", overwrite: bool = False) -> int:
    """Index every shard of ``corpus`` into ``index``; return the number of documents indexed."""
    from projection.index import lucene

    index = Path(index)
    if index.exists() and any(index.iterdir()):
        if not overwrite:
            raise NanoKnowInputError("index directory exists and is not empty (pass --overwrite to replace it)",
                                     file=index, field="--index")
        shutil.rmtree(index)
    if threads < 1:
        raise NanoKnowInputError("must be at least 1", field="--threads")
    source = Corpus(corpus, text_column=text_column)
    shards = source.list_shards()
    index.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".nanoknow-index-", dir=index.parent) as tmp:
        count = export_jsonl(source, Path(tmp), shards=shards)
        lucene.build_index(tmp, index, threads=threads, store_raw=store_raw, store_contents=store_contents,
                           store_docvectors=store_docvectors)
    indexed = lucene.index_num_docs(index)
    if indexed != count:
        raise RuntimeError(f"Anserini indexed {indexed} of {count} documents; see its log above")
    log.info("indexed %d documents from %d shards into %s", count, len(shards), index)
    return count




