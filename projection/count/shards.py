"""Which shards to count, and their ``text`` column streamed in record batches.

Reads go through DuckDB, as every other corpus read (:class:`projection.corpus.shards.Corpus`), so
the same local directories and remote prefixes (``hf://``, ``s3://``, ``https://``) work; only
the text column is read, a batch at a time, so memory does not grow with the shard.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Iterator

from projection.corpus.shards import Corpus
from nanoknow_common.errors import NanoKnowInputError

log = logging.getLogger(__name__)

_RANGE = re.compile(r"^(\d+)(?:-(\d+))?$")
_TEXT_TYPES = ("string", "large_string", "string_view")


def parse_shard_spec(spec: str) -> list[int]:
    """``"0-3,7"`` -> ``[0, 1, 2, 3, 7]`` (sorted, without repeats)."""
    shards: set[int] = set()
    for part in spec.split(","):
        match = _RANGE.match(part.strip())
        if match is None:
            raise NanoKnowInputError(f"bad shard range {part.strip()!r}: expected N or N-M, e.g. 0-99,120",
                                     field="--shards")
        first = int(match.group(1))
        last = int(match.group(2)) if match.group(2) is not None else first
        if last < first or last > 99999:
            raise NanoKnowInputError(f"bad shard range {part.strip()!r}", field="--shards")
        shards.update(range(first, last + 1))
    return sorted(shards)


def select_shards(corpus: Corpus, spec: str | None) -> list[int]:
    """The shards named by ``spec`` (all of a local corpus when None); local ones must exist."""
    if spec is None:
        return corpus.list_shards()  # raises for a remote corpus: its shards must be named
    shards = parse_shard_spec(spec)
    if not corpus.remote:
        missing = [s for s in shards if not Path(corpus.shard_uri(s)).is_file()]
        if missing:
            raise NanoKnowInputError(f"{len(missing)} of the shards asked for are not in the corpus "
                                     f"(first: {Path(corpus.shard_uri(missing[0])).name})",
                                     file=corpus.location, field="--shards")
    return shards


def _duckdb_error(err: Exception) -> bool:
    return type(err).__module__.startswith(("duckdb", "_duckdb"))


def _connection(corpus: Corpus):
    import duckdb

    con = duckdb.connect()
    if corpus.remote:
        try:  # httpfs serves hf://, s3:// and https://; autoloaded when available
            con.execute("INSTALL httpfs")
            con.execute("LOAD httpfs")
        except Exception as err:  # pragma: no cover - needs the network
            log.debug("could not load httpfs now (%s); DuckDB will try to autoload it", err)
    return con


def iter_text_batches(corpus: Corpus, shard: int, *, batch_rows: int = 1024) -> Iterator[list[str | None]]:
    """The shard's ``text`` values (None for a null), ``batch_rows`` at a time.

    Raises :class:`NanoKnowInputError` naming the shard file for an unreadable file, a
    missing column or a column that is not text.
    """
    uri = corpus.shard_uri(shard)
    column = corpus.text_column
    if not corpus.remote and not Path(uri).is_file():
        raise NanoKnowInputError("shard file not found", file=uri, field="--shards")
    con = _connection(corpus)
    try:
        try:
            reader = con.sql(f'SELECT "{column}" FROM read_parquet(?)', params=[uri]).to_arrow_reader(batch_rows)
        except Exception as err:
            if _duckdb_error(err):
                raise NanoKnowInputError(f"cannot read shard: {str(err).splitlines()[0]}",
                                         file=uri, field=column) from err
            raise
        kind = str(reader.schema.field(0).type)
        if kind not in _TEXT_TYPES:
            raise NanoKnowInputError(f"column {column!r} holds {kind}, not text", file=uri, field=column)
        try:
            for batch in reader:
                yield batch.column(0).to_pylist()
        except Exception as err:
            if _duckdb_error(err) or type(err).__module__.startswith("pyarrow"):
                raise NanoKnowInputError(f"cannot read shard: {str(err).splitlines()[0]}",
                                         file=uri, field=column) from err
            raise
    finally:
        con.close()


def check_text_column(corpus: Corpus, shard: int) -> None:
    """Raise :class:`NanoKnowInputError` unless the shard has a text column ``text_column``."""
    uri = corpus.shard_uri(shard)
    if not corpus.remote and not Path(uri).is_file():
        raise NanoKnowInputError("shard file not found", file=uri, field="--shards")
    con = _connection(corpus)
    try:
        column = corpus.text_column
        kind = con.execute(f'DESCRIBE SELECT "{column}" FROM read_parquet(?)', [uri]).fetchone()[1]
    except Exception as err:
        if _duckdb_error(err):
            raise NanoKnowInputError(f"cannot read shard: {str(err).splitlines()[0]}", file=uri,
                                     field=corpus.text_column) from err
        raise
    finally:
        con.close()
    if kind != "VARCHAR":
        raise NanoKnowInputError(f"column {column!r} holds {kind}, not text", file=uri, field=column)
