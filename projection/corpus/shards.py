"""Read documents by id from a parquet corpus (local directory or remote prefix) with DuckDB.

A corpus is a directory or URI prefix holding ``shard_XXXXX.parquet`` files with a ``text``
column (the karpathy/fineweb-edu-100b-shuffle layout). A document id is
``shard_<5-digit shard>_<row>``; the row may be zero-padded or not (``shard_01031_487`` and
``shard_01031_000487`` are the same document). Remote prefixes (``hf://``, ``s3://``,
``https://``...) go through the same queries (DuckDB's httpfs reads only the row groups it
needs). All reads are batched per shard: one query per shard serves every id wanted from it.
Ids use ASCII digits only (``\\d`` would accept any Unicode digit). Local shard paths are
passed to DuckDB with its glob characters escaped, so a folder named ``glob[1]`` or
``star*dir`` is read as named, never as a pattern matching a sibling. The text column must
hold strings; any other type is refused with the shard file and column named.

Public: :func:`parse_doc_id`, :func:`format_doc_id`, :func:`shard_file_name`,
:class:`Corpus` (``read_documents``, ``iter_shard``, ``list_shards``, ``num_rows``) and the
shortcut :func:`read_documents`.
"""

from __future__ import annotations

import logging
import re
import threading
from collections import defaultdict
from pathlib import Path
from typing import Iterable, Iterator

from nanoknow_common.errors import NanoKnowInputError

log = logging.getLogger(__name__)

DOC_ID_RE = re.compile(r"^shard_([0-9]{5})_([0-9]+)$")
SHARD_FILE_RE = re.compile(r"^shard_([0-9]{5})\.parquet$")
REMOTE_PREFIXES = ("hf://", "s3://", "s3a://", "gs://", "gcs://", "https://", "http://", "az://", "abfss://")


def parse_doc_id(doc_id: str, *, file=None, line=None) -> tuple[int, int]:
    """``"shard_01031_487"`` (or ``"shard_01031_000487"``) -> ``(1031, 487)``."""
    match = DOC_ID_RE.match(doc_id) if isinstance(doc_id, str) else None
    if match is None:
        raise NanoKnowInputError(
            f"malformed document id {doc_id!r}: expected shard_<5 digits>_<row>, e.g. shard_01031_487",
            file=file, line=line, field="doc_id")
    return int(match.group(1)), int(match.group(2))


def format_doc_id(shard: int, row: int) -> str:
    """The canonical (row not padded) id, as in the released qrels."""
    return f"shard_{shard:05d}_{row}"


def canonical_doc_id(doc_id: str) -> str:
    """Drop zero padding of the row: ``shard_01031_000487`` -> ``shard_01031_487``."""
    return format_doc_id(*parse_doc_id(doc_id))


def shard_file_name(shard: int) -> str:
    """``1031`` -> ``shard_01031.parquet``."""
    return f"shard_{shard:05d}.parquet"


def duckdb_literal_path(path: str | Path) -> str:
    """A local path as DuckDB reads it literally: its glob characters ``*``, ``?`` and ``[``
    are each put in a one-character class (``glob[1]`` -> ``glob[[]1]``)."""
    return "".join(f"[{c}]" if c in "*?[" else c for c in str(path))


def is_remote(location: str | Path) -> bool:
    """True for URI prefixes DuckDB reads over the network (hf://, s3://, https://, ...)."""
    return str(location).startswith(REMOTE_PREFIXES)


class Corpus:
    """A parquet corpus at a local directory or a remote prefix; reads are batched per shard."""

    def __init__(self, location: str | Path, *, text_column: str = "text"):
        self.location = str(location).rstrip("/") if is_remote(location) else Path(location)
        self.remote = is_remote(location)
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", text_column):
            raise NanoKnowInputError(f"invalid column name {text_column!r}", field="--text-column")
        self.text_column = text_column
        if not self.remote and not Path(location).is_dir():
            raise NanoKnowInputError("corpus directory does not exist", file=location, field="--corpus")
        self._local = threading.local()

    def __repr__(self) -> str:
        return f"Corpus({str(self.location)!r})"

    # -- plumbing -----------------------------------------------------------------------
    def _connection(self):
        con = getattr(self._local, "con", None)
        if con is None:
            import duckdb

            con = duckdb.connect()
            if self.remote:
                try:  # httpfs serves hf://, s3:// and https://; autoloaded when available
                    con.execute("INSTALL httpfs")
                    con.execute("LOAD httpfs")
                except Exception as err:  # pragma: no cover - needs the network
                    log.debug("could not load httpfs now (%s); DuckDB will try to autoload it", err)
            self._local.con = con
        return con

    def shard_uri(self, shard: int) -> str:
        """Path or URI of one shard file."""
        name = shard_file_name(shard)
        return f"{self.location}/{name}" if self.remote else str(self.location / name)

    def _check_shard(self, shard: int, example_id: str) -> str:
        uri = self.shard_uri(shard)
        if not self.remote and not Path(uri).is_file():
            raise NanoKnowInputError(f"shard {shard_file_name(shard)} not found in the corpus (needed by {example_id})",
                                     file=uri, field="doc_id")
        return uri

    def _read_path(self, uri: str) -> str:
        """What DuckDB is given for a shard: remote URIs as they are, local paths escaped."""
        return uri if self.remote else duckdb_literal_path(uri)

    def _not_text(self, uri: str, what: str) -> NanoKnowInputError:
        return NanoKnowInputError(f"column {self.text_column!r} holds {what}, not text (strings)",
                                  file=uri, field=self.text_column)

    def check_text_column(self, shard: int) -> None:
        """Raise :class:`NanoKnowInputError` unless the shard has the text column with strings."""
        uri = self._check_shard(shard, shard_file_name(shard))
        (_, column_type, *_), = self._query(f'DESCRIBE SELECT "{self.text_column}" FROM read_parquet(?)',
                                            [self._read_path(uri)], uri, shard_file_name(shard))
        if column_type != "VARCHAR":
            raise self._not_text(uri, f"{column_type} values")

    def _query(self, sql: str, params: list, uri: str, example_id: str):
        try:
            return self._connection().execute(sql, params).fetchall()
        except Exception as err:
            if type(err).__module__.startswith(("duckdb", "_duckdb")):
                first_line = str(err).splitlines()[0] if str(err) else type(err).__name__
                raise NanoKnowInputError(f"cannot read shard (needed by {example_id}): {first_line}",
                                         file=uri, field="doc_id") from err
            raise

    # -- public API ---------------------------------------------------------------------
    def list_shards(self) -> list[int]:
        """Shard numbers present (local directories only; remote prefixes cannot be listed)."""
        if self.remote:
            raise NanoKnowInputError("cannot list the shards of a remote corpus; download it or pass shard numbers",
                                     file=str(self.location), field="--corpus")
        shards = sorted(int(m.group(1)) for p in self.location.iterdir() if (m := SHARD_FILE_RE.match(p.name)))
        if not shards:
            raise NanoKnowInputError("no shard_XXXXX.parquet files in the corpus directory",
                                     file=self.location, field="--corpus")
        return shards

    def num_rows(self, shard: int) -> int:
        """Number of documents in one shard (from the parquet footer)."""
        uri = self._check_shard(shard, shard_file_name(shard))
        rows = self._query("SELECT sum(num_rows) FROM parquet_file_metadata(?)", [self._read_path(uri)], uri,
                           shard_file_name(shard))
        return int(rows[0][0] or 0)

    def read_documents(self, doc_ids: Iterable[str], *, progress: bool = False) -> dict[str, str]:
        """Texts of ``doc_ids`` (keys as given, in the given order), one query per shard.

        Raises :class:`NanoKnowInputError` for a malformed id, a missing shard or a row past
        the end of its shard.
        """
        wanted: dict[int, dict[int, list[str]]] = defaultdict(lambda: defaultdict(list))
        order: list[str] = []
        for doc_id in doc_ids:
            shard, row = parse_doc_id(doc_id)
            if doc_id not in wanted[shard][row]:
                wanted[shard][row].append(doc_id)
                order.append(doc_id)
        texts: dict[str, str] = {}
        shards = sorted(wanted)
        iterator = shards
        if progress:
            from tqdm import tqdm

            iterator = tqdm(shards, desc="reading shards", unit="shard")
        for shard in iterator:
            rows = wanted[shard]
            example = rows[next(iter(rows))][0]
            uri = self._check_shard(shard, example)
            col = self.text_column
            found = self._query(
                f'SELECT file_row_number, "{col}" FROM read_parquet(?, file_row_number=true) '
                "WHERE file_row_number IN (SELECT unnest(?))",
                [self._read_path(uri), sorted(rows)], uri, example)
            for row, text in found:
                if text is not None and not isinstance(text, str):
                    raise self._not_text(uri, f"{type(text).__name__} values")
                for doc_id in rows[row]:
                    texts[doc_id] = text if text is not None else ""
            if len(found) < len(rows):
                missing = sorted(set(rows) - {r for r, _ in found})
                n = self.num_rows(shard)
                raise NanoKnowInputError(
                    f"row {missing[0]} of {rows[missing[0]][0]} is past the end of the shard ({n} rows)"
                    + (f" (and {len(missing) - 1} more ids)" if len(missing) > 1 else ""),
                    file=uri, field="doc_id")
        return {doc_id: texts[doc_id] for doc_id in order}

    def read_document(self, doc_id: str) -> str:
        """Text of one document (prefer :meth:`read_documents` for more than a few)."""
        return self.read_documents([doc_id])[doc_id]

    def iter_shard(self, shard: int, *, batch_rows: int = 8192) -> Iterator[tuple[int, str]]:
        """``(row, text)`` for every row of one shard, streamed in record batches."""
        uri = self._check_shard(shard, shard_file_name(shard))
        col = self.text_column
        try:
            reader = self._connection().sql(
                f'SELECT file_row_number, "{col}" FROM read_parquet(?, file_row_number=true) ORDER BY file_row_number',
                params=[self._read_path(uri)]).to_arrow_reader(batch_rows)
        except Exception as err:
            if type(err).__module__.startswith(("duckdb", "_duckdb")):
                raise NanoKnowInputError(f"cannot read shard: {str(err).splitlines()[0]}", file=uri,
                                         field=self.text_column) from err
            raise
        import pyarrow as pa

        text_type = reader.schema.field(1).type
        if not (pa.types.is_string(text_type) or pa.types.is_large_string(text_type)
                or getattr(pa.types, "is_string_view", lambda _: False)(text_type) or pa.types.is_null(text_type)):
            raise self._not_text(uri, f"{text_type} values")
        for batch in reader:
            rows = batch.column(0).to_pylist()
            texts = batch.column(1).to_pylist()
            for row, text in zip(rows, texts):
                yield int(row), text if text is not None else ""


def read_documents(corpus: str | Path | Corpus, doc_ids: Iterable[str], **kwargs) -> dict[str, str]:
    """Shortcut: ``Corpus(corpus).read_documents(doc_ids)`` (accepts a :class:`Corpus` too)."""
    if not isinstance(corpus, Corpus):
        corpus = Corpus(corpus)
    return corpus.read_documents(doc_ids, **kwargs)
