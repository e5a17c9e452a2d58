"""Names that become one folder or file-name component (``--dataset``, ``--corpus-name`` ...)."""

from __future__ import annotations

import re

from nanoknow_common.errors import NanoKnowInputError

#: ASCII letters, digits, ``-``, ``_`` and ``.``: no path separator, no ``..`` escape, no glob.
_PLAIN = re.compile(r"[A-Za-z0-9_.-]+")


def check_plain_name(value, *, field: str) -> str:
    """Return ``value`` if it is a plain name usable as one path component, else raise.

    A plain name holds only ASCII letters, digits, ``-``, ``_`` and ``.`` and is neither ``.``
    nor ``..``: joined under an output folder it can never point outside it.
    """
    if not isinstance(value, str) or not _PLAIN.fullmatch(value) or value in (".", ".."):
        raise NanoKnowInputError(
            f"must be a plain name (ASCII letters, digits, '-', '_', '.'; not '.' or '..'), got {value!r}",
            field=field)
    return value
