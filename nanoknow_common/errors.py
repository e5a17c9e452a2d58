"""The one exception type for bad user input: it names the file, line and field."""

from __future__ import annotations

from pathlib import Path


class NanoKnowInputError(ValueError):
    """Bad input (a file, a line of it, a field, an argument) with a one-line reason.

    ``str(err)`` reads ``<file>:<line>: <field>: <reason>`` with the parts that are known.
    The CLI turns it into exit code 2.
    """

    def __init__(self, reason: str, *, file: str | Path | None = None,
                 line: int | None = None, field: str | None = None):
        self.reason = reason
        self.file = str(file) if file is not None else None
        self.line = line
        self.field = field
        where = ""
        if self.file is not None:
            where = self.file + (f":{line}" if line is not None else "") + ": "
        elif line is not None:
            where = f"line {line}: "
        super().__init__(where + (f"{field}: " if field else "") + reason)
