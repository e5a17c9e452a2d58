"""``nanoknow index``: a Lucene BM25 index over parquet shards, document ids = corpus ids.

Shards are streamed into JSONL files (``{"id": "shard_00000_17", "contents": ...}``) which
Anserini's ``IndexCollection`` then indexes. Raw text is not stored unless ``--store-raw``:
the projection reads text from the parquet corpus (the released FineWeb-Edu index stores it
and weighs 326 GB; it is usable as is).

Nothing is lost on bad input or an interruption:

* every input is checked before anything is written (threads, the corpus: at least one
  shard, each with a string text column; an index path that is, contains or is inside the
  corpus; a folder to replace that is not a Lucene index);
* the export and the new index are made in a scratch folder next to the index
  (:class:`nanoknow_common.scratch.ScratchDir`), removed on every exit Python sees and, after
  a SIGKILL, by the next run; the new index replaces the old one (``--overwrite``) by a
  rename only once it is complete, so a failed or interrupted build leaves the old one as it was.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from pathlib import Path

from nanoknow_common.errors import NanoKnowInputError
from nanoknow_common.file_io import naming_path
from nanoknow_common.scratch import ScratchDir
from projection.corpus.shards import Corpus, format_doc_id

log = logging.getLogger(__name__)

SCRATCH_PREFIX = ".nanoknow-index-tmp-"


def export_jsonl(corpus: Corpus, out_dir: Path, *, shards: list[int] | None = None) -> int:
    """Write one ``shard_XXXXX.jsonl`` per shard into ``out_dir``; return the document count."""
    from tqdm import tqdm

    shards = shards if shards is not None else corpus.list_shards()
    total = 0
    for shard in tqdm(shards, desc="exporting shards", unit="shard"):
        path = out_dir / f"shard_{shard:05d}.jsonl"
        with naming_path(path), open(path, "w", encoding="utf-8") as handle:
            for row, text in corpus.iter_shard(shard):
                handle.write(json.dumps({"id": format_doc_id(shard, row), "contents": text}, ensure_ascii=False))
                handle.write("\n")
                total += 1
    return total


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def check_index_target(index: Path, corpus: str | Path, *, overwrite: bool) -> bool:
    """Refuse an index path that would harm the corpus or a folder that is not ours to replace.

    Returns True when an existing index is to be replaced (``overwrite`` and a Lucene index there).
    """
    from projection.index.lucene import is_lucene_index

    target, source = Path(index).resolve(), Path(corpus).resolve()
    if _inside(target, source):
        raise NanoKnowInputError(f"is {'the' if target == source else 'inside the'} corpus folder {corpus}; "
                                 "choose an index folder outside it", file=index, field="--index")
    if _inside(source, target):
        raise NanoKnowInputError(f"contains the corpus folder {corpus}; choose an index folder beside it",
                                 file=index, field="--index")
    if not Path(index).exists() and not Path(index).is_symlink():
        return False
    if not Path(index).is_dir():
        raise NanoKnowInputError("exists and is not a folder", file=index, field="--index")
    if not any(Path(index).iterdir()):
        return False
    if not overwrite:
        raise NanoKnowInputError("index directory exists and is not empty (pass --overwrite to replace it)",
                                 file=index, field="--index")
    if not is_lucene_index(index):
        raise NanoKnowInputError("is not a Lucene index (no segments_N file): --overwrite replaces only an "
                                 "index; move this folder away or choose another --index", file=index, field="--index")
    return True


def build_corpus_index(corpus: str | Path, index: str | Path, *, threads: int = 1, store_raw: bool = False,
                       store_contents: bool = False, store_docvectors: bool = False,
                       text_column: str = "text", overwrite: bool = False) -> int:
    """Index every shard of ``corpus`` into ``index``; return the number of documents indexed.

    Checks everything first; builds in a scratch folder and moves the finished index into
    place, so the folder at ``index`` (an earlier index with ``overwrite``) is untouched until
    the new one is complete.
    """
    from projection.index import lucene

    index = Path(index)
    if threads < 1:
        raise NanoKnowInputError("must be at least 1", field="--threads")
    source = Corpus(corpus, text_column=text_column)
    shards = source.list_shards()
    for shard in shards:
        source.check_text_column(shard)
    replace = check_index_target(index, corpus, overwrite=overwrite)
    with ScratchDir(index.parent, SCRATCH_PREFIX) as scratch:
        exported, built = scratch / "jsonl", scratch / "index"
        exported.mkdir()
        count = export_jsonl(source, exported, shards=shards)
        lucene.build_index(exported, built, threads=threads, store_raw=store_raw, store_contents=store_contents,
                           store_docvectors=store_docvectors)
        indexed = lucene.index_num_docs(built)
        if indexed != count:
            raise RuntimeError(f"Anserini indexed {indexed} of {count} documents; see its log above")
        _swap_in(built, index, scratch / "replaced" if replace else None)
    log.info("indexed %d documents from %d shards into %s", count, len(shards), index)
    return count


def _swap_in(built: Path, index: Path, old_place: Path | None) -> None:
    """Move the finished index to ``index``; an index there is first moved to ``old_place``
    (then deleted with the scratch folder). Both moves are renames within one folder."""
    if old_place is not None:
        os.replace(index, old_place)
    elif index.is_dir():
        index.rmdir()  # an empty folder (the only kind check_index_target lets through)
    try:
        os.replace(built, index)
    except OSError:
        if old_place is not None:  # put the old index back before reporting the failure
            os.replace(old_place, index)
        raise
    if old_place is not None:
        shutil.rmtree(old_place, ignore_errors=True)
