"""Reading text files with errors that name the file and line, and writes that name their path.

* :func:`text_lines`: the lines of a UTF-8 file; bytes that are not UTF-8 raise
  :class:`NanoKnowInputError` with the file and line (never a bare ``UnicodeDecodeError``);
* :func:`read_text`, :func:`read_json`: a whole UTF-8 / JSON file, the same way;
* :func:`naming_path`: a context manager that gives an ``OSError`` raised while writing
  (disk full, read-only folder) the path it was writing, so the one-line CLI error names it.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Iterator

from nanoknow_common.errors import NanoKnowInputError


def _not_utf8(path, line: int, data: bytes, err: UnicodeDecodeError, field: str | None) -> NanoKnowInputError:
    bad = data[err.start:err.start + 1]
    return NanoKnowInputError(f"not UTF-8 text (byte 0x{bad.hex()} at column {err.start + 1})",
                              file=path, line=line, field=field)


def text_lines(path: str | Path, *, field: str | None = None) -> Iterator[tuple[int, str]]:
    """``(line number, text)`` for every line of a UTF-8 file, without its ``\\n`` / ``\\r\\n``.

    Raises :class:`NanoKnowInputError` naming the file and line for bytes that are not UTF-8
    (``field`` names the flag or field the file came from, if any).
    """
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as err:
                raise _not_utf8(path, number, raw, err, field) from None
            if text.endswith("\n"):
                text = text[:-1]
            if text.endswith("\r"):
                text = text[:-1]
            yield number, text


def json_object_lines(path: str | Path, *, field: str | None = None) -> Iterator[tuple[int, dict]]:
    """``(line number, object)`` for every non-blank line of a JSONL file of objects; a line
    that is not UTF-8, not JSON or not an object raises naming the file and line."""
    for number, line in text_lines(path, field=field):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as err:
            raise NanoKnowInputError(f"not valid JSON ({err.msg})", file=path, line=number) from err
        if not isinstance(row, dict):
            raise NanoKnowInputError("expected a JSON object", file=path, line=number)
        yield number, row


def read_text(path: str | Path, *, field: str | None = None) -> str:
    """A whole UTF-8 file; bytes that are not UTF-8 raise :class:`NanoKnowInputError` (file, line)."""
    data = Path(path).read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line_start = data.rfind(b"\n", 0, err.start) + 1
        line_end = data.find(b"\n", err.start)
        line = data[line_start:None if line_end < 0 else line_end]
        shifted = UnicodeDecodeError(err.encoding, line, err.start - line_start, err.end - line_start, err.reason)
        raise _not_utf8(path, data.count(b"\n", 0, err.start) + 1, line, shifted, field) from None


def read_json(path: str | Path, *, what: str = "file", field: str | None = None):
    """A UTF-8 JSON file; raises :class:`NanoKnowInputError` naming the file (and line) when it
    cannot be read, is not UTF-8 or is not valid JSON. ``what`` says what the file should be."""
    try:
        text = read_text(path, field=field)
    except OSError as err:
        raise NanoKnowInputError(f"cannot read {what}: {err.strerror or err}", file=path, field=field) from err
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise NanoKnowInputError(f"{what} is not valid JSON ({err.msg})", file=path, line=err.lineno,
                                 field=field) from None


@contextlib.contextmanager
def naming_path(path: str | Path):
    """Re-raise an ``OSError`` that does not name a file (a failed ``write``, ``flush`` or
    ``close``: disk full, I/O error) with ``path`` as its file name."""
    try:
        yield
    except OSError as err:
        if err.filename is not None:
            raise
        named = OSError(err.errno, err.strerror or str(err))
        named.filename = str(path)
        raise named from err
