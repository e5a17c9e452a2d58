"""Measure the two constants that turn tokens into shards on a local copy of the corpus.

* characters per shard: exact, ``sum(length(text))`` per shard file with DuckDB, shard 0 on;
* characters per token of a checkpoint's tokenizer: on the first documents of shard 0 (the
  corpus is shuffled, so they are a random sample), counting one ``<|bos|>`` per document as
  nanochat's loader does; the band is +-3 standard errors over 20 groups of documents.
"""

from __future__ import annotations

import logging
import statistics
from pathlib import Path

from projection.corpus.shards import Corpus, duckdb_literal_path, shard_file_name
from nanoknow_common.errors import NanoKnowInputError

log = logging.getLogger(__name__)

SAMPLE_GROUPS = 20


def measure_shard_chars(corpus: str | Path | Corpus, min_total_chars: float, *, limit: int | None = None) -> list[int]:
    """Characters of shards 0, 1, ... in order, until they add up to ``min_total_chars``.

    ``limit`` caps how many shards may be read (the run's train shards); reaching it first is an
    error, since the run may then have looped over its data.
    """
    import duckdb
    from tqdm import tqdm

    corpus = corpus if isinstance(corpus, Corpus) else Corpus(corpus)
    con = duckdb.connect()
    present = set(corpus.list_shards())
    sizes: list[int] = []
    total = 0
    with tqdm(desc="measuring shard characters", unit="shard") as bar:
        while total < min_total_chars:
            shard = len(sizes)
            if limit is not None and shard >= limit:
                raise NanoKnowInputError(
                    f"the {limit} train shards hold {total:,} characters, fewer than the {min_total_chars:,.0f} "
                    "the run may have read: it may have looped over its data", field="corpus")
            if shard not in present:
                raise NanoKnowInputError(
                    f"{shard_file_name(shard)} is missing: shards 0..{shard - 1} hold {total:,} characters, fewer "
                    f"than the {min_total_chars:,.0f} the run may have read", file=str(corpus.location), field="corpus")
            uri = corpus.shard_uri(shard)  # local paths escaped: a glob character in a folder name is literal
            (count,), = con.execute(
                f'SELECT coalesce(sum(length("{corpus.text_column}")), 0) FROM read_parquet(?)',
                [uri if corpus.remote else duckdb_literal_path(uri)]).fetchall()
            sizes.append(int(count))
            total += int(count)
            bar.update(1)
    log.info("measured %d shards: %s characters", len(sizes), f"{total:,}")
    return sizes


def measure_chars_per_token(corpus: str | Path | Corpus, tokenizer_file: str | Path, *,
                            max_docs: int = 2000) -> tuple[float, float, float]:
    """(low, nominal, high) characters per token of ``tokenizer_file`` on shard 0's first documents."""
    from nanochat_adapter.tokenizer import load_encoding

    corpus = corpus if isinstance(corpus, Corpus) else Corpus(corpus)
    encoding = load_encoding(tokenizer_file)
    texts = []
    for _, text in corpus.iter_shard(0):
        texts.append(text)
        if len(texts) >= max_docs:
            break
    if len(texts) < 2:
        raise NanoKnowInputError("need at least 2 documents in shard 0 to measure chars/token",
                                 file=corpus.shard_uri(0), field="corpus")
    tokens = [len(ids) + 1 for ids in encoding.encode_ordinary_batch(texts)]  # +1: the <|bos|> per document
    chars = [len(t) for t in texts]
    groups = min(SAMPLE_GROUPS, len(texts))
    ratios = [sum(chars[g::groups]) / sum(tokens[g::groups]) for g in range(groups)]
    nominal = sum(chars) / sum(tokens)
    margin = 3 * statistics.stdev(ratios) / groups ** 0.5
    return (max(nominal - margin, 1e-6), nominal, nominal + margin)
